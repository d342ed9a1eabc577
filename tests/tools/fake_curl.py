#!/usr/bin/env python3
"""A stand-in for `curl` that answers as Grafana's HTTP API, the Kubernetes API (Secrets) and
Istio's pilot-agent would, for the tests of the grafana-sa Job's script (tests/jobs.rs).

State lives in the JSON file named by $FAKE_STATE: service accounts, their tokens, Secrets, and
how often the sidecar was told to quit. Only the curl options the script uses are understood:
-f -s -S -u -H -d -X -o -w --cacert. Responses are compact JSON, as Grafana (Go) writes them;
the Kubernetes API's are indented, as the API server writes them.
"""
import base64
import json
import os
import re
import sys
from urllib.parse import parse_qs, urlparse


def main():
    args = sys.argv[1:]
    opts = {"headers": [], "method": None, "data": None, "user": None, "out": None, "write": None, "fail": False}
    url = None
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-u", "-H", "-d", "-X", "-o", "-w", "--cacert"):
            value = args[i + 1]
            i += 2
            if a == "-u":
                opts["user"] = value
            elif a == "-H":
                opts["headers"].append(value)
            elif a == "-d":
                opts["data"] = value
            elif a == "-X":
                opts["method"] = value
            elif a == "-o":
                opts["out"] = value
            elif a == "-w":
                opts["write"] = value
            continue
        if a.startswith("-") and not a.startswith("--"):
            opts["fail"] = opts["fail"] or "f" in a
            i += 1
            continue
        url = a
        i += 1
    method = opts["method"] or ("POST" if opts["data"] is not None else "GET")
    with open(os.environ["FAKE_STATE"]) as f:
        state = json.load(f)
    status, body = answer(state, method, url, opts)
    with open(os.environ["FAKE_STATE"], "w") as f:
        json.dump(state, f)
    if opts["out"] != "/dev/null":
        sys.stdout.write(body)
    if opts["write"]:
        sys.stdout.write(opts["write"].replace("%{http_code}", str(status)))
    if opts["fail"] and status >= 400:
        sys.exit(22)


def bearer(opts):
    for header in opts["headers"]:
        if header.lower().startswith("authorization: bearer "):
            return header.split(" ", 2)[2]
    return None


def answer(state, method, url, opts):
    parsed = urlparse(url)
    path = parsed.path
    if parsed.netloc == "127.0.0.1:15020" and path == "/quitquitquit":
        state["quit"] = state.get("quit", 0) + 1
        return 200, ""
    if parsed.netloc == "kubernetes.default.svc":
        if bearer(opts) != "kube-token":
            return 401, json.dumps({"kind": "Status", "code": 401})
        return kube(state, method, path, opts)
    if path == "/api/health":
        return 200, json.dumps({"database": "ok"}, separators=(",", ":"))
    if path == "/api/search":
        token = bearer(opts)
        valid = any(token == t["key"] for sa in state["accounts"] for t in sa["tokens"])
        return (200, "[]") if valid else (401, json.dumps({"message": "invalid API key"}))
    if opts["user"] != state["admin"]:
        return 401, json.dumps({"message": "invalid username or password"})
    if path == "/api/serviceaccounts/search":
        query = parse_qs(parsed.query).get("query", [""])[0]
        found = [account_json(sa) for sa in state["accounts"] if query in sa["name"]]
        return 200, json.dumps({"totalCount": len(found), "serviceAccounts": found, "page": 1, "perPage": 1000}, separators=(",", ":"))
    if path == "/api/serviceaccounts" and method == "POST":
        request = json.loads(opts["data"])
        if any(sa["name"] == request["name"] for sa in state["accounts"]):
            # Grafana's answer to a duplicate: 400, not 409.
            return 400, json.dumps({"message": "service account already exists", "messageId": "serviceaccounts.ErrAlreadyExists"})
        sa = {"id": len(state["accounts"]) + 2, "name": request["name"], "role": request["role"], "tokens": []}
        state["accounts"].append(sa)
        return 201, json.dumps(account_json(sa), separators=(",", ":"))
    match = re.fullmatch(r"/api/serviceaccounts/(\d+)/tokens", path)
    if match and method == "POST":
        sa = next((sa for sa in state["accounts"] if sa["id"] == int(match.group(1))), None)
        if sa is None:
            return 404, json.dumps({"message": "service account not found"})
        name = json.loads(opts["data"])["name"]
        if any(t["name"] == name for t in sa["tokens"]):
            return 400, json.dumps({"message": "service account token with given name already exists"})
        state["issued"] = state.get("issued", 0) + 1
        token = {"id": state["issued"], "name": name, "key": f"glsa_fake{state['issued']:04d}_{sa['name']}"}
        sa["tokens"].append(token)
        return 200, json.dumps(token, separators=(",", ":"))
    return 404, json.dumps({"message": "not found"})


def account_json(sa):
    return {"id": sa["id"], "uid": f"u{sa['id']}", "name": sa["name"], "login": f"sa-1-{sa['name']}", "orgId": 1,
            "isDisabled": False, "role": sa["role"], "tokens": len(sa["tokens"]), "avatarUrl": "/avatar/x",
            "accessControl": {"serviceaccounts:read": True}}


def kube(state, method, path, opts):
    match = re.fullmatch(r"/api/v1/namespaces/([^/]+)/secrets(?:/([^/]+))?", path)
    if not match:
        return 404, "{}"
    namespace, name = match.group(1), match.group(2)
    if namespace != state["namespace"]:
        return 403, json.dumps({"kind": "Status", "code": 403})
    secrets = state["secrets"]
    if method == "GET":
        if name not in secrets:
            return 404, json.dumps({"kind": "Status", "code": 404}, indent=2)
        data = {k: base64.b64encode(v.encode()).decode() for k, v in secrets[name].items()}
        return 200, json.dumps({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": name}, "data": data}, indent=2)
    body = json.loads(opts["data"])
    if method == "PUT":
        if name not in secrets:
            return 404, json.dumps({"kind": "Status", "code": 404}, indent=2)
        secrets[name] = body["stringData"]
        return 200, json.dumps(body, indent=2)
    if method == "POST":
        name = body["metadata"]["name"]
        if name in secrets:
            return 409, json.dumps({"kind": "Status", "code": 409}, indent=2)
        secrets[name] = body["stringData"]
        return 201, json.dumps(body, indent=2)
    return 405, "{}"


if __name__ == "__main__":
    main()
