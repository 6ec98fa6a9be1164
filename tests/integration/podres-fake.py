#!/usr/bin/env python3
"""A stand-in kubelet pod-resources server: gRPC List of
k8s.io/kubelet/pkg/apis/podresources/v1 on a unix socket, with python's
grpcio and stubs generated at start from the agent's own .proto.

    podres-fake.py PROTO SOCKET ASSIGNMENT.json

Each List answers what ASSIGNMENT.json says at that moment:
    {"pods": [{"name": "p", "namespace": "ns", "containers": [
        {"name": "c", "devices": [{"resource_name": "nvidia.com/gpu",
                                   "device_ids": ["GPU-..."]}]}]}]}
and the calls are counted in SOCKET.calls (one line each).  {"fail": "why"}
answers gRPC status UNAVAILABLE with that message instead.
"""
import json
import os
import sys
import tempfile
from concurrent import futures

import grpc
from grpc_tools import protoc

proto, sock, assignment = sys.argv[1:4]
gen = tempfile.mkdtemp(prefix="podres-stubs.")
rc = protoc.main(["protoc", f"-I{os.path.dirname(proto)}", f"--python_out={gen}",
                  f"--grpc_python_out={gen}", proto])
if rc != 0:
    sys.exit(f"podres-fake: protoc failed ({rc})")
sys.path.insert(0, gen)
import podresources_pb2 as pb  # noqa: E402
import podresources_pb2_grpc as pbg  # noqa: E402


class Lister(pbg.PodResourcesListerServicer):
    def List(self, request, context):
        with open(sock + ".calls", "a") as f:
            f.write("List\n")
        with open(assignment) as f:
            a = json.load(f)
        if a.get("fail"):
            context.abort(grpc.StatusCode.UNAVAILABLE, a["fail"])
        r = pb.ListPodResourcesResponse()
        for p in a.get("pods", []):
            pr = r.pod_resources.add(name=p["name"], namespace=p["namespace"])
            for c in p.get("containers", []):
                cr = pr.containers.add(name=c["name"])
                for d in c.get("devices", []):
                    cr.devices.add(resource_name=d["resource_name"],
                                   device_ids=d["device_ids"])
        return r


server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
pbg.add_PodResourcesListerServicer_to_server(Lister(), server)
if server.add_insecure_port("unix:" + sock) == 0:
    sys.exit(f"podres-fake: cannot listen on {sock}")
server.start()
print("podres-fake: serving", flush=True)
server.wait_for_termination()
