"""What the browser makes of a page: title, readable text, links, limits, decoding."""

from __future__ import annotations

import gzip
import zlib

import pytest

from minds.adapters.drivers.browser import (
    BrowseError,
    Page,
    _Decoder,
    collapse,
    extract,
    links_result,
    navigate_result,
    read_result,
)

HTML = """<!doctype html>
<html><head><title>  Atlas
 status </title>
<style>body { color: red }</style>
<script>var secret = "never shown";</script>
<base href="/docs/">
</head>
<body>
<nav><a href="intro.html">Intro</a> | <a href="intro.html#top">Intro again</a></nav>
<h1>Atlas&nbsp;is &amp; was   up</h1>
<p>All   systems
   nominal.<br/>Next line.</p>
<ul><li>one</li><li>two</li></ul>
<a href="https://other.example/x?y=1">elsewhere</a>
<a href="mailto:ops@example.com">mail</a>
<a href="javascript:alert(1)">js</a>
<a href="//cdn.example/lib.js">cdn</a>
<noscript>enable scripts</noscript>
<template><p>hidden</p></template>
</body></html>"""


def page(body: bytes, content_type: str = "text/html; charset=utf-8", **extra: object) -> Page:
    values: dict[str, object] = {
        "url": "https://atlas.example/status",
        "final_url": "https://atlas.example/status",
        "status": 200,
        "content_type": content_type.split(";")[0],
        "charset": "utf-8",
        "body": body,
        "truncated": False,
    }
    values.update(extra)
    return Page(**values)  # type: ignore[arg-type]


def test_extract_title_text_and_links() -> None:
    extracted = extract(HTML, "https://atlas.example/status")
    assert extracted.title == "Atlas status"
    assert extracted.text == "Intro | Intro again\nAtlas is & was up\nAll systems nominal.\n" + (
        "Next line.\none\ntwo\nelsewhere mail js cdn"
    )
    assert extracted.links == [
        "https://atlas.example/docs/intro.html",
        "https://other.example/x?y=1",
        "https://cdn.example/lib.js",
    ]


def test_scripts_styles_and_hidden_parts_never_reach_the_text() -> None:
    text = extract(HTML, "https://atlas.example/").text
    for hidden in ("never shown", "color: red", "enable scripts", "hidden"):
        assert hidden not in text


def test_a_missing_head_end_tag_does_not_hide_the_body() -> None:
    extracted = extract("<html><head><title>T</title><body><p>visible</p>", "https://a.example/")
    assert (extracted.title, extracted.text) == ("T", "visible")


def test_collapse() -> None:
    assert collapse("  a \t b  \n\n\n  c  \n") == "a b\nc"


def test_navigate_reports_status_title_and_final_url() -> None:
    result = navigate_result(
        page(HTML.encode(), status=404, redirects=("https://atlas.example/status",))
    )
    assert result.ok
    assert result.fields == {
        "statusCode": 404,
        "title": "Atlas status",
        "finalUrl": "https://atlas.example/status",
    }
    assert "HTTP 404" in result.summary
    assert "after 1 redirects" in result.summary


def test_read_caps_the_text_at_max_chars() -> None:
    result = read_result(page(HTML.encode()), 10)
    assert result.fields["text"] == "Intro | In"
    assert result.fields["length"] > 10  # type: ignore[operator]
    assert result.truncated


def test_plain_text_is_read_as_is() -> None:
    result = read_result(page(b"line one\n\n  line   two", "text/plain"), 100)
    assert result.fields["text"] == "line one\nline two"


def test_a_binary_document_cannot_be_read() -> None:
    result = read_result(page(b"\x89PNG....", "image/png"), 100)
    assert not result.ok
    assert "not a text document (image/png)" in (result.error or "")


def test_links_are_capped_and_counted() -> None:
    result = links_result(page(HTML.encode()), 2)
    assert result.fields == {"count": 3}
    assert isinstance(result.output, dict)
    assert result.output["links"] == [
        "https://atlas.example/docs/intro.html",
        "https://other.example/x?y=1",
    ]
    assert result.truncated


def test_a_page_without_content_type_is_sniffed() -> None:
    assert page(b"<!DOCTYPE html><title>x</title>", "").is_html
    assert not page(b"just text", "").is_html


def test_gzip_is_decoded_within_the_limit() -> None:
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024))
    decoder = _Decoder("gzip")
    produced = decoder.feed(bomb, 1024 * 1024)
    assert len(produced) <= 1024 * 1024
    assert decoder.overflowed


def test_deflate_is_decoded() -> None:
    decoder = _Decoder("deflate")
    assert decoder.feed(zlib.compress(b"hello"), 100) + decoder.flush(100) == b"hello"


def test_unknown_encodings_are_refused() -> None:
    with pytest.raises(BrowseError, match="unsupported content encoding"):
        _Decoder("br")
