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

{{/*
controller.extraEnv, refused where it names a variable the chart sets from a value of its own:
two definitions of one name leave the Pod with the last, silently overriding that value.
*/}}
{{- define "minds.extraEnv" -}}
{{- $chartSets := dict
  "POD_ID" "the Pod's own name"
  "MINDS_DATABASE_URL" "database.url"
  "MINDS_DATABASE_OWNER_URL" "database.ownerUrl"
  "MINDS_DATABASE_APP_ROLE" "database.appRole"
  "MINDS_DATABASE_READER_ROLE" "database.readerRole"
  "MINDS_MODEL_ENDPOINTS" "modelEndpoints"
  "MINDS_CAPABILITY_PRICES" "capabilities.prices"
  "MINDS_APPROVAL_TTL_SECONDS" "approvals.ttlSeconds"
  "MINDS_LOG_FORMAT" "controller.logFormat"
  "MINDS_LEDGER_KEYS_DIR" "ledger.keys"
  "MINDS_LEDGER_ACTIVE_KEY" "ledger.keys.activeKey"
  "MINDS_LEDGER_CHECKPOINT_CONFIGMAP" "ledger.keys (the checkpoint ConfigMap)"
  "MINDS_LEDGER_CHECKPOINT_SECONDS" "ledger.checkpoint.intervalSeconds"
  "MINDS_CONTROLLER_NAMESPACE" "the Pod's own namespace" -}}
{{- range $var := .Values.controller.extraEnv -}}
{{- with get $chartSets $var.name -}}
{{- fail (printf "controller.extraEnv: %s is set by the chart from %s; set that instead" $var.name .) -}}
{{- end -}}
{{- end -}}
{{- with .Values.controller.extraEnv -}}
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{/* controller.extraVolumes, refused where one takes the name of a volume the chart mounts. */}}
{{- define "minds.extraVolumes" -}}
{{- range .Values.controller.extraVolumes -}}
{{- if has .name (list "model-endpoints" "tmp" "ledger-keys") -}}
{{- fail (printf "controller.extraVolumes: %s is the name of a volume of the chart's own" .name) -}}
{{- end -}}
{{- end -}}
{{- with .Values.controller.extraVolumes -}}
{{ toYaml . }}
{{- end -}}
{{- end -}}

{{/*
Whether the Prometheus Operator object .kind may be rendered: "true" when the cluster serves its
CRD. Rendered where it is not served, the API server refuses it with a message that names no
value; left out without a word, people lack the alerts they think they have (helm template
serves no API unless given --api-versions). So the render fails, naming the value (.value) and
the API, unless metrics.ifCrdsMissing is skip.
*/}}
{{- define "minds.monitoringApi" -}}
{{- $api := printf "monitoring.coreos.com/v1/%s" .kind -}}
{{- if .root.Capabilities.APIVersions.Has $api -}}
true
{{- else if eq .root.Values.metrics.ifCrdsMissing "fail" -}}
{{- fail (printf "%s: this cluster does not serve %s (the Prometheus Operator's CRDs). Install them, set %s=false, or set metrics.ifCrdsMissing=skip to leave it out; with helm template, pass --api-versions %s" .value $api .value $api) -}}
{{- end -}}
{{- end -}}

{{/*
crds.enabled and crds.keep, true when unset: `helm upgrade --reuse-values` from a release
made before these values existed reuses the old values without the new defaults, and must not
read that as "stop managing the CRDs".
*/}}
{{- define "minds.crdsEnabled" -}}
{{- if dig "enabled" true (.Values.crds | default dict) -}}true{{- end -}}
{{- end -}}

{{- define "minds.crdsKeep" -}}
{{- if dig "keep" true (.Values.crds | default dict) -}}true{{- end -}}
{{- end -}}

{{/* Which release's chart last wrote the CRDs (part-of is in the generated text). */}}
{{- define "minds.crdLabels" -}}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The Secret of the ledger's sealing keys, if any: existing, or created by the chart. */}}
{{- define "minds.ledgerKeysSecret" -}}
{{- if .Values.ledger.keys.existingSecret -}}
{{- .Values.ledger.keys.existingSecret -}}
{{- else if .Values.ledger.keys.create -}}
{{- include "minds.fullname" . }}-ledger-keys
{{- end -}}
{{- end -}}
