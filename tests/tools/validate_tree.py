#!/usr/bin/env python3
"""Validates every object of a rendered tree, the way a kubeconform-style CI check would.

Usage: validate_tree.py TREE_DIR CRD_SCHEMAS_DIR [KUBERNETES_VERSION]

- Built-in kinds (no group or a k8s.io group): kubernetes-validate, strict (unknown fields fail).
- Custom resources: the JSON schema `<group>/<kind>_<version>.json` under CRD_SCHEMAS_DIR,
  Draft 7. A custom resource without a schema is a failure, never a skip.
- `kustomization.yaml` files are kustomize's, not Kubernetes objects: skipped here (CI builds
  them with `kubectl kustomize`).

Prints one line per problem and a summary line; exits 1 on any problem.
"""
import json
import os
import sys

import jsonschema
import kubernetes_validate
import yaml

BUILTIN_GROUPS = {"", "apps", "batch", "policy", "autoscaling", "networking.k8s.io", "rbac.authorization.k8s.io",
                  "storage.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io", "scheduling.k8s.io",
                  "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io"}


def main():
    tree, schemas = sys.argv[1], sys.argv[2]
    version = sys.argv[3] if len(sys.argv) > 3 else "1.33.0"
    problems, checked = [], 0
    cache = {}
    for root, _, files in os.walk(tree):
        for name in sorted(files):
            if not name.endswith(".yaml") or name == "kustomization.yaml":
                continue
            path = os.path.join(root, name)
            with open(path) as f:
                documents = [d for d in yaml.safe_load_all(f) if d is not None]
            for document in documents:
                checked += 1
                api_version = document.get("apiVersion", "")
                kind = document.get("kind", "")
                group, _, version_part = api_version.rpartition("/")
                where = f"{path}: {kind}/{document.get('metadata', {}).get('name')}"
                if group in BUILTIN_GROUPS:
                    if "sops" in document:
                        # A SOPS-encrypted Secret: the `sops` block is removed by the decryptor.
                        document = {k: v for k, v in document.items() if k != "sops"}
                    try:
                        kubernetes_validate.validate(document, version, strict=True)
                    except Exception as error:  # noqa: BLE001 - report every kind of failure
                        problems.append(f"{where}: {str(error).splitlines()[0]}")
                    continue
                schema_path = os.path.join(schemas, group, f"{kind.lower()}_{version_part}.json")
                if not os.path.exists(schema_path):
                    problems.append(f"{where}: no schema for {api_version} {kind} ({schema_path})")
                    continue
                if schema_path not in cache:
                    with open(schema_path) as f:
                        cache[schema_path] = jsonschema.Draft7Validator(json.load(f))
                errors = sorted(cache[schema_path].iter_errors(document), key=lambda e: list(e.path))
                for error in errors:
                    problems.append(f"{where}: {'.'.join(str(p) for p in error.path)}: {error.message[:300]}")
    for problem in problems:
        print(problem)
    print(f"{checked} objects checked, {len(problems)} problems")
    sys.exit(1 if problems or checked == 0 else 0)


if __name__ == "__main__":
    main()
