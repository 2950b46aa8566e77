"""Parses a Prometheus text exposition (stdin) with prometheus_client's parser, as Prometheus
would, for tests/metrics.rs. Prints {"types": {family: type}, "samples": [[name, labels, value]]}
as JSON; a parse error exits non-zero."""
import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families

types = {}
samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    types[family.name] = family.type
    for s in family.samples:
        value = s.value
        if math.isinf(value):
            value = "+Inf" if value > 0 else "-Inf"
        samples.append([s.name, s.labels, value])
print(json.dumps({"types": types, "samples": samples}))
