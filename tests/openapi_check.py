"""Checks for tests/openapi.rs. Reads {"doc": <OpenAPI document>, "checks": [[schema, instance], ...]}
on stdin: validates the document with openapi-spec-validator, then each instance against
#/components/schemas/<schema> with a JSON Schema 2020-12 validator (OpenAPI 3.1's dialect).
Exits 1 listing every failure."""
import json
import sys

from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

data = json.load(sys.stdin)
doc = data["doc"]
validate(doc)
failures = []
for name, instance in data["checks"]:
    schema = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    for error in Draft202012Validator(schema).iter_errors(instance):
        failures.append(f"{name}: {error.message} at {list(error.absolute_path)} in {json.dumps(instance)[:300]}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"ok: the document is valid and {len(data['checks'])} responses match their schemas")
