#!/usr/bin/env python3
"""Extracts, from the official OpenAI OpenAPI spec (github.com/openai/openai-openapi,
openapi.json), the schemas the Responses object and its streaming events need,
with everything they reference, into tests/spec/openai_responses.json.

  git -C <mirror> show <commit>:openapi.json > /tmp/openapi.json
  tests/spec/extract_responses.py /tmp/openapi.json <commit> > tests/spec/openai_responses.json

Documentation-only keywords (description, example, title, x-*) are dropped; every
validation keyword is kept as the spec has it. The result keeps the spec's shape
({"components": {"schemas": ...}}) so its "$ref"s resolve as they are."""
import json
import sys

ROOTS = [
    "Response", "ResponseStreamEvent", "ResponseCreatedEvent", "ResponseInProgressEvent",
    "ResponseOutputItemAddedEvent", "ResponseContentPartAddedEvent", "ResponseTextDeltaEvent",
    "ResponseTextDoneEvent", "ResponseContentPartDoneEvent", "ResponseRefusalDeltaEvent",
    "ResponseRefusalDoneEvent", "ResponseFunctionCallArgumentsDeltaEvent",
    "ResponseFunctionCallArgumentsDoneEvent", "ResponseOutputItemDoneEvent",
    "ResponseCompletedEvent", "ResponseIncompleteEvent", "ResponseFailedEvent",
    "ResponseErrorEvent", "Error",
]
DROP = {"description", "example", "examples", "title", "dataDescription", "deprecated",
        "default", "externalDocs"}


def refs(o, acc):
    if isinstance(o, dict):
        for k, v in o.items():
            if k == "$ref":
                acc.add(v.split("/")[-1])
            else:
                refs(v, acc)
    elif isinstance(o, list):
        for v in o:
            refs(v, acc)


def strip(o):
    if isinstance(o, dict):
        r = {}
        for k, v in o.items():
            if k == "properties":
                r[k] = {name: strip(s) for name, s in v.items()}
            elif k in DROP or k.startswith("x-"):
                continue
            else:
                r[k] = strip(v)
        return r
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o


def main():
    spec = json.load(open(sys.argv[1]))
    commit = sys.argv[2]
    schemas = spec["components"]["schemas"]
    seen, todo = set(), list(ROOTS)
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        acc = set()
        refs(schemas[n], acc)
        todo += sorted(acc)
    out = {
        "source": "https://github.com/openai/openai-openapi/blob/%s/openapi.json" % commit,
        "commit": commit,
        "openapi": spec["openapi"],
        "roots": ROOTS,
        "components": {"schemas": {k: strip(schemas[k]) for k in sorted(seen)}},
    }
    json.dump(out, sys.stdout, indent=None, separators=(",", ":"), sort_keys=True)
    sys.stdout.write("\n")


main()
