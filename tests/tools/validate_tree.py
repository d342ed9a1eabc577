#!/usr/bin/env python3
"""Validates every built-in object of a rendered tree, the way a kubeconform-style CI check would.

Usage: validate_tree.py TREE_DIR [KUBERNETES_VERSION]

- Built-in kinds (the groups in BUILTIN_GROUPS): kubernetes-validate, strict (unknown fields fail).
- Custom resources (every other group) are counted and left to the Rust check against the pinned
  upstream CRDs (tests/crd/, whose BUILTIN_GROUPS is this list).
- `kustomization.yaml` files are kustomize's, not Kubernetes objects: skipped here (CI builds
  them with `kubectl kustomize`).

Prints one line per problem and a summary line; exits 1 on any problem or when no built-in object
was checked.
"""
import os
import sys

import kubernetes_validate
import yaml

BUILTIN_GROUPS = {"", "apps", "batch", "policy", "autoscaling", "networking.k8s.io", "rbac.authorization.k8s.io",
                  "storage.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io", "scheduling.k8s.io",
                  "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io"}


def main():
    tree = sys.argv[1]
    version = sys.argv[2] if len(sys.argv) > 2 else "1.33.0"
    problems, checked, custom = [], 0, 0
    for root, _, files in os.walk(tree):
        for name in sorted(files):
            if not name.endswith(".yaml") or name == "kustomization.yaml":
                continue
            path = os.path.join(root, name)
            with open(path) as f:
                documents = [d for d in yaml.safe_load_all(f) if d is not None]
            for document in documents:
                api_version = document.get("apiVersion", "")
                kind = document.get("kind", "")
                group = api_version.rpartition("/")[0]
                if group not in BUILTIN_GROUPS:
                    custom += 1
                    continue
                checked += 1
                where = f"{path}: {kind}/{document.get('metadata', {}).get('name')}"
                if "sops" in document:
                    # A SOPS-encrypted Secret: the `sops` block is removed by the decryptor.
                    document = {k: v for k, v in document.items() if k != "sops"}
                try:
                    kubernetes_validate.validate(document, version, strict=True)
                except Exception as error:  # noqa: BLE001 - report every kind of failure
                    problems.append(f"{where}: {str(error).splitlines()[0]}")
    for problem in problems:
        print(problem)
    print(f"{checked} built-in objects checked, {len(problems)} problems ({custom} custom resources left to the CRD check)")
    sys.exit(1 if problems or checked == 0 else 0)


if __name__ == "__main__":
    main()
