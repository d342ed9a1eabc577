#!/usr/bin/env python3
"""The determinism gate (run by .ci/run): render the demo twice into separate directories and
once more into the first, then fail on any difference other than fresh ciphertext.

- a re-render into the same directory must change no byte at all (sealing reuses ciphertext);
- two renders into empty directories must be byte-identical except for the ciphertext fields of
  sealed objects (SealedSecret `spec.encryptedData` values; SOPS `ENC[...]` values, `sops.mac`,
  `sops.age[].enc`, `sops.lastmodified`), which sealing randomises by design.

Usage: determinism-gate.py TFRS_BINARY FIXTURE [FIXTURE...]   (env: TFRS_MASTER_KEY or keys below)
"""
import os
import subprocess
import sys
import tempfile

import yaml


def read_tree(root):
    files = {}
    for base, _, names in os.walk(root):
        for name in names:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def mask(document):
    """The document with every randomised ciphertext field replaced by a marker."""
    if not isinstance(document, dict):
        return document
    document = dict(document)
    if document.get("kind") == "SealedSecret":
        spec = dict(document.get("spec", {}))
        spec["encryptedData"] = {key: "<sealed>" for key in spec.get("encryptedData", {})}
        document["spec"] = spec
    if "sops" in document:
        sops = dict(document["sops"])
        for key in ("mac", "lastmodified"):
            sops[key] = "<sops>"
        sops["age"] = [dict(entry, enc="<age>") for entry in sops.get("age", [])]
        document["sops"] = sops
        for field in ("data", "stringData"):
            if field in document:
                document[field] = {key: "<sops>" for key in document[field]}
    return document


def render(tfrs, fixture, out, key_file):
    # The render memo of `out` is kept beside it (and goes with it), not in the user's cache.
    env = dict(os.environ, TFRS_CACHE_DIR=os.path.join(os.path.dirname(out), "memo"))
    result = subprocess.run([tfrs, "render", fixture, "--master-key-file", key_file, "--out", out], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"render of {fixture} failed:\n{result.stdout}{result.stderr}")


def main():
    tfrs, fixtures = sys.argv[1], sys.argv[2:]
    key_file = os.path.join(os.path.dirname(__file__), "..", "fixtures", "demo", "keys", "master.key")
    problems = []
    for fixture in fixtures:
        with tempfile.TemporaryDirectory() as tmp:
            first, second = os.path.join(tmp, "first"), os.path.join(tmp, "second")
            render(tfrs, fixture, first, key_file)
            render(tfrs, fixture, second, key_file)
            before = read_tree(first)
            render(tfrs, fixture, first, key_file)
            again = read_tree(first)
            if again != before:
                changed = sorted(p for p in set(before) | set(again) if before.get(p) != again.get(p))
                problems.append(f"{fixture}: re-rendering into the same directory changed {changed[:5]}")
            other = read_tree(second)
            if sorted(other) != sorted(before):
                problems.append(f"{fixture}: the two renders have different files")
            for path in sorted(set(before) & set(other)):
                if before[path] == other[path]:
                    continue
                a, b = (list(yaml.safe_load_all(t.decode())) for t in (before[path], other[path]))
                if [mask(d) for d in a] != [mask(d) for d in b]:
                    problems.append(f"{fixture}: `{path}` differs beyond ciphertext between two renders")
            print(f"{fixture}: {len(before)} files, re-render identical, separate renders differ only in ciphertext"
                  if not problems else f"{fixture}: checked")
    for problem in problems:
        print(f"determinism gate: {problem}", file=sys.stderr)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
