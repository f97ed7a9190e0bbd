"""Errors that cross layers: raised by adapters, understood by the engine."""

from __future__ import annotations


class Conflict(Exception):
    """A conditional write lost a race: the object changed since it was read (HTTP 409)."""


class NotFound(Exception):
    """The object is gone."""


class AlreadyExists(Exception):
    """A create found an object of that name: adopt it instead of making another."""


class Refused(Exception):
    """The API server refused the request for a reason no retry soon will change (HTTP 403),
    such as a namespace being deleted: report it, do not crash on it."""
