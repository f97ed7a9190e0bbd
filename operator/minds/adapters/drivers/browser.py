"""Read-only browsing over httpx: navigate, read a page's text, list its links.

GET only, http(s) only, no cookies kept between invocations, no proxies from the environment
(a proxy would be the address actually connected to, and the SSRF guard would then judge the
wrong host).
Every connection is opened by a transport that resolves the host through the guard and
connects to the very address the guard accepted, while TLS still verifies the certificate
against the URL's host name. Redirects are followed by hand, at most five, each hop checked
before it is requested.

Bodies are streamed and cut at a size limit (compressed bodies are decompressed under the same
limit, so a small gzip bomb cannot inflate past it); a whole invocation has one deadline.
"""

from __future__ import annotations

import codecs
import re
import socket
import ssl
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Final
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx

from minds.adapters.drivers.ssrf import (
    AllowList,
    Guard,
    GuardedTransport,
    ResolutionFailed,
    Resolver,
    SsrfRefused,
)
from minds.domain.base import Model
from minds.domain.capabilities.registry import (
    BrowserLinksParameters,
    BrowserReadParameters,
    UrlParameters,
)
from minds.domain.capabilities.results import DriverResult

NAVIGATE: Final = "browser.navigate"
READ: Final = "browser.read"
LINKS: Final = "browser.links"

MAX_BODY_BYTES: Final = 2 * 1024 * 1024
MAX_REDIRECTS: Final = 5
TIMEOUT_SECONDS: Final = 20.0
TITLE_CHARS: Final = 300
USER_AGENT: Final = "minds-operator/0.1 (read-only)"
REDIRECT_STATUSES: Final = frozenset({301, 302, 303, 307, 308})
HTML_TYPES: Final = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES: Final = frozenset({"application/json", "application/xml", "application/javascript"})


class BrowseError(Exception):
    """The page could not be loaded as asked (too many redirects, undecodable body...)."""


class DeadlineExceeded(BrowseError):
    pass


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    final_url: str
    status: int
    content_type: str
    charset: str
    body: bytes
    truncated: bool
    redirects: tuple[str, ...] = ()

    @property
    def is_html(self) -> bool:
        if self.content_type in HTML_TYPES:
            return True
        if self.content_type:
            return False
        return self.body.lstrip()[:512].lower().startswith((b"<!doctype html", b"<html"))

    @property
    def is_text(self) -> bool:
        return (
            self.is_html
            or self.content_type.startswith("text/")
            or self.content_type in TEXT_TYPES
            or self.content_type.endswith(("+json", "+xml"))
        )

    def text(self) -> str:
        return self.body.decode(self.charset, errors="replace")


class BrowserDriver:
    """`browser.navigate`, `browser.read` and `browser.links`, read-only."""

    capabilities: Final = frozenset({NAVIGATE, READ, LINKS})

    def __init__(
        self,
        *,
        timeout_seconds: float = TIMEOUT_SECONDS,
        max_body_bytes: int = MAX_BODY_BYTES,
        max_redirects: int = MAX_REDIRECTS,
        resolver: Resolver = socket.getaddrinfo,
        ssl_context: ssl.SSLContext | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.timeout_seconds = timeout_seconds
        self.max_body_bytes = max_body_bytes
        self.max_redirects = max_redirects
        self._resolver = resolver
        self._ssl_context = ssl_context
        self._user_agent = user_agent

    def supports_dry_run(self, capability: str) -> bool:
        return False

    def invoke(
        self,
        capability: str,
        parameters: Model,
        *,
        mind_allowed_hosts: Sequence[str] = (),
        dry_run: bool = False,
    ) -> DriverResult:
        assert isinstance(parameters, UrlParameters)
        try:
            page = self.fetch(parameters.url, allowed_hosts=mind_allowed_hosts)
        except SsrfRefused as refused:
            return DriverResult.failure(f"refused: {refused}")
        except ResolutionFailed as error:
            return DriverResult.failure(str(error))
        except (httpx.TimeoutException, DeadlineExceeded):
            return DriverResult.failure(
                f"timed out after {self.timeout_seconds:g}s loading {parameters.url}"
            )
        except (httpx.HTTPError, httpx.InvalidURL, BrowseError, OSError) as error:
            return DriverResult.failure(f"could not load {parameters.url}: {_describe(error)}")
        if capability == NAVIGATE:
            return navigate_result(page)
        if capability == READ:
            assert isinstance(parameters, BrowserReadParameters)
            return read_result(page, parameters.max_chars)
        if capability == LINKS:
            assert isinstance(parameters, BrowserLinksParameters)
            return links_result(page, parameters.limit)
        raise LookupError(f"the browser driver does not serve {capability}")

    def fetch(self, url: str, *, allowed_hosts: Iterable[str] = ()) -> Page:
        """GET `url`, following redirects by hand; every hop passes the guard first."""
        guard = Guard(AllowList.of(allowed_hosts), self._resolver)
        deadline = time.monotonic() + self.timeout_seconds
        redirects: list[str] = []
        current = url
        with httpx.Client(
            transport=GuardedTransport(guard, self._ssl_context),
            trust_env=False,
            follow_redirects=False,
            headers={
                "User-Agent": self._user_agent,
                "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
                "Accept-Encoding": "gzip, deflate, identity",
            },
        ) as client:
            for _hop in range(self.max_redirects + 1):
                try:
                    guard.check_url(current)
                except SsrfRefused as refused:
                    if not redirects:
                        raise
                    raise SsrfRefused(f"redirected to {current}: {refused}") from refused
                remaining = _remaining(deadline)
                with client.stream("GET", current, timeout=httpx.Timeout(remaining)) as response:
                    location = response.headers.get("location")
                    if response.status_code in REDIRECT_STATUSES and location:
                        current = urljoin(str(response.url), location.strip())
                        redirects.append(current)
                        continue
                    body, truncated = _read_body(response, self.max_body_bytes, deadline)
                    return Page(
                        url=url,
                        final_url=str(response.url),
                        status=response.status_code,
                        content_type=_media_type(response.headers.get("content-type", "")),
                        charset=_charset(response.charset_encoding),
                        body=body,
                        truncated=truncated,
                        redirects=tuple(redirects),
                    )
        raise BrowseError(f"more than {self.max_redirects} redirects")


def _remaining(deadline: float) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded("deadline passed")
    return remaining


def _read_body(response: httpx.Response, limit: int, deadline: float) -> tuple[bytes, bool]:
    """Up to `limit` bytes of the decoded body, and whether there was more."""
    decoder = _Decoder(response.headers.get("content-encoding", ""))
    body = bytearray()
    for chunk in response.iter_raw():
        _remaining(deadline)
        body += decoder.feed(chunk, limit + 1 - len(body))
        if len(body) > limit or decoder.overflowed:
            return bytes(body[:limit]), True
    body += decoder.flush(limit + 1 - len(body))
    return bytes(body[:limit]), len(body) > limit or decoder.overflowed


class _Decoder:
    """Content-Encoding decoding that never produces more than it is allowed to."""

    def __init__(self, encoding: str) -> None:
        encoding = encoding.strip().lower()
        self.overflowed = False
        self._zlib: zlib._Decompress | None = None
        if encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS)
        elif encoding not in ("", "identity"):
            raise BrowseError(f"unsupported content encoding {encoding!r}")

    def feed(self, chunk: bytes, room: int) -> bytes:
        if self._zlib is None:
            return chunk
        try:
            data = self._zlib.decompress(chunk, max(room, 1))
        except zlib.error as error:
            raise BrowseError(f"cannot decode the body: {error}") from error
        if self._zlib.unconsumed_tail:
            self.overflowed = True
        return data

    def flush(self, room: int) -> bytes:
        if self._zlib is None:
            return b""
        return self._zlib.flush()[: max(room, 0)]


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _charset(declared: str | None) -> str:
    if declared:
        try:
            return codecs.lookup(declared).name
        except LookupError:
            pass
    return "utf-8"


def _describe(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) <= 300 else text[:300]


# --- what a page says ---------------------------------------------------------------------

_SKIPPED: Final = frozenset(
    {"script", "style", "noscript", "template", "svg", "iframe", "object", "head", "title"}
)
_BLOCKS: Final = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset",
        "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
        "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "td", "th", "tr", "ul",
    }
)  # fmt: skip
_VOID: Final = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "wbr"})


@dataclass
class Extracted:
    title: str = ""
    text: str = ""
    links: list[str] = field(default_factory=list)


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.hrefs: list[str] = []
        self.base: str | None = None
        self._skipping: list[str] = []
        self._in_title = False
        self._preformatted = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        if tag == "base" and self.base is None and "href" in values:
            self.base = values["href"]
        if tag in ("a", "area") and "href" in values:
            self.hrefs.append(values["href"])
        if tag == "title":
            self._in_title = True
        if tag == "body":
            # A missing </head> is closed by <body>, as browsers do.
            self._skipping.clear()
        if tag == "pre":
            self._preformatted += 1
        if tag in _SKIPPED:
            self._skipping.append(tag)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # Self-closing tags (<br/>, <a href=".."/>) never open a skipped region.
        self.handle_starttag(tag, attrs)
        if tag in _SKIPPED and self._skipping and self._skipping[-1] == tag:
            self._skipping.pop()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        if tag == "pre":
            self._preformatted = max(self._preformatted - 1, 0)
        if tag in _SKIPPED and tag in self._skipping:
            # Unwind to the matching start tag: sloppy HTML leaves inner tags open.
            while self._skipping and self._skipping.pop() != tag:
                pass
        elif tag in _BLOCKS and tag not in _VOID:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        if not self._skipping:
            # Line breaks in the source are spaces; only blocks (and <pre>) break lines.
            self.parts.append(data if self._preformatted else _WHITESPACE.sub(" ", data))


_SPACES: Final = re.compile(r"[^\S\n]+")
_WHITESPACE: Final = re.compile(r"\s+")


def collapse(text: str) -> str:
    """Runs of spaces become one space; lines are trimmed; empty lines go."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def extract(html: str, page_url: str) -> Extracted:
    """Title, readable text and absolute http(s) links of an HTML document."""
    parser = _PageParser()
    parser.feed(html)
    parser.close()
    base = urljoin(page_url, parser.base.strip()) if parser.base else page_url
    links: list[str] = []
    seen: set[str] = set()
    for href in parser.hrefs:
        try:
            absolute = urldefrag(urljoin(base, href.strip())).url
            scheme = urlsplit(absolute).scheme.lower()
        except ValueError:
            continue
        if scheme in ("http", "https") and absolute not in seen:
            seen.add(absolute)
            links.append(absolute)
    title = collapse(" ".join(parser.title_parts)).replace("\n", " ")[:TITLE_CHARS]
    return Extracted(title=title, text=collapse("".join(parser.parts)), links=links)


def _extracted(page: Page) -> Extracted:
    if page.is_html:
        return extract(page.text(), page.final_url)
    if page.is_text:
        return Extracted(text=collapse(page.text()))
    return Extracted()


def _origin_note(page: Page) -> str:
    hops = f" after {len(page.redirects)} redirects" if page.redirects else ""
    cut = f", body cut at {len(page.body)} bytes" if page.truncated else ""
    return f"HTTP {page.status} from {page.final_url}{hops}{cut}"


def navigate_result(page: Page) -> DriverResult:
    title = _extracted(page).title if page.is_html else ""
    return DriverResult.success(
        f"{_origin_note(page)}: {title!r}" if title else _origin_note(page),
        fields={"statusCode": page.status, "title": title, "finalUrl": page.final_url},
        output={
            "url": page.url,
            "finalUrl": page.final_url,
            "statusCode": page.status,
            "contentType": page.content_type,
            "title": title,
            "redirects": list(page.redirects),
            "bytes": len(page.body),
            "bodyTruncated": page.truncated,
        },
        truncated=page.truncated,
    )


def read_result(page: Page, max_chars: int) -> DriverResult:
    if not page.is_text:
        return DriverResult.failure(
            f"{page.final_url} is not a text document ({page.content_type or 'no content type'})"
        )
    extracted = _extracted(page)
    text = extracted.text[:max_chars]
    cut = len(extracted.text) > max_chars
    return DriverResult.success(
        f"{_origin_note(page)}: {len(extracted.text)} characters of text"
        + (f", {max_chars} returned" if cut else ""),
        fields={"text": text, "length": len(extracted.text)},
        output={
            "finalUrl": page.final_url,
            "statusCode": page.status,
            "title": extracted.title,
            "text": text,
            "length": len(extracted.text),
            "bodyTruncated": page.truncated,
        },
        truncated=cut or page.truncated,
    )


def links_result(page: Page, limit: int) -> DriverResult:
    links = _extracted(page).links if page.is_html else []
    kept = links[:limit]
    return DriverResult.success(
        f"{_origin_note(page)}: {len(links)} links"
        + (f", first {limit} returned" if len(links) > limit else ""),
        fields={"count": len(links)},
        output={
            "finalUrl": page.final_url,
            "statusCode": page.status,
            "links": list(kept),
            "total": len(links),
            "bodyTruncated": page.truncated,
        },
        truncated=len(links) > limit or page.truncated,
    )
