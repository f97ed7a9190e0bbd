{{/* Names and labels shared by every template. */}}

{{- define "minds.fullname" -}}
{{- .Release.Name | trunc 53 | trimSuffix "-" -}}
{{- end -}}

{{- define "minds.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "minds.labels" -}}
{{ include "minds.selectorLabels" . }}
app.kubernetes.io/part-of: minds-operator
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "minds.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The username the API server gives the controller's ServiceAccount token. */}}
{{- define "minds.controllerUsername" -}}
system:serviceaccount:{{ .Release.Namespace }}:{{ .Values.serviceAccount.name }}
{{- end -}}

{{/*
The objects of one of the project's files/ (the single source of RBAC and admission), with
the chart's labels merged in and the controller's default username replaced by this
release's. A file that no longer names the default fails the render rather than matching
nobody. Call with (dict "root" $ "file" "NAME.yaml"), adding "substituteUsername" true for
the files that name the controller and "labelsByName" (dict OBJECT-NAME (dict LABELS)) for
labels only some objects get.
*/}}
{{- define "minds.fileObjects" -}}
{{- $root := .root -}}
{{- $text := $root.Files.Get (printf "files/%s" .file) -}}
{{- if not $text }}{{ fail (printf "files/%s is missing from the chart" .file) }}{{ end -}}
{{- $default := "'system:serviceaccount:minds-system:minds-controller'" -}}
{{- if .substituteUsername -}}
{{- if not (contains $default $text) -}}
{{- fail (printf "files/%s does not name %s" .file $default) -}}
{{- end -}}
{{- $text = replace $default (printf "'%s'" (include "minds.controllerUsername" $root)) $text -}}
{{- end -}}
{{- $labelsByName := .labelsByName | default dict -}}
{{- range $doc := regexSplit "(?m)^---\\s*$" $text -1 }}
{{- $obj := fromYaml $doc -}}
{{- if $obj }}
{{- $meta := $obj.metadata -}}
{{- $extra := get $labelsByName $meta.name | default dict -}}
{{- $_ := set $meta "labels" (merge (dict) $extra (include "minds.labels" $root | fromYaml) ($meta.labels | default dict)) }}
---
{{ toYaml $obj }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "minds.serviceAccountSubject" -}}
- kind: ServiceAccount
  name: {{ .Values.serviceAccount.name }}
  namespace: {{ .Release.Namespace }}
{{- end -}}

{{- define "minds.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "minds.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
