#!/usr/bin/python3
"""Generates the OpenAPI component schemas of the draplane API server.

Reads the object model's schema files (src/api/schema/*.yaml, format in the README there), the
server's own schema files for the kinds the model does not carry (src/server/openapi/schema/*.yaml,
same format) and the list of upstream fields the model keeps verbatim
(src/server/openapi/schema/upstream_fields.yaml), and writes a C++ source file holding one JSON
object: OpenAPI v3 component schemas keyed by their upstream names
(`io.k8s.api.resource.v1.ResourceClaim`, `io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta`, ...).

The server builds its /openapi/v3 documents and its strict field validation from that object
(src/server/openapi/openapi.h). It runs at build time, so the documents can never drift from the
object model.

Usage: gen_openapi_schemas.py --api-schema DIR --server-schema DIR --out FILE
"""

import argparse
import glob
import json
import os
import sys

import yaml

# Schema file stem -> OpenAPI package prefix (upstream's names).
PACKAGES = {
    "meta_v1": "io.k8s.apimachinery.pkg.apis.meta.v1",
    "core_v1": "io.k8s.api.core.v1",
    "resource_v1": "io.k8s.api.resource.v1",
    "resource_v1alpha3": "io.k8s.api.resource.v1alpha3",
    "coordination_v1": "io.k8s.api.coordination.v1",
    "events_v1": "io.k8s.api.events.v1",
    "scheduling_v1": "io.k8s.api.scheduling.v1",
    # draplane's own group, named as CRD schemas are (reversed group, version, kind).
    "draplane_v1alpha1": "dev.draplane.v1alpha1",
    "rbac_v1": "io.k8s.api.rbac.v1",
    "authorization_v1": "io.k8s.api.authorization.v1",
    "authentication_v1": "io.k8s.api.authentication.v1",
}

QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
MICRO_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime"

SCALARS = {
    "string": {"type": "string"},
    "bool": {"type": "boolean"},
    "int32": {"type": "integer", "format": "int32"},
    "int64": {"type": "integer", "format": "int64"},
    "json": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
}
REFS = {"Quantity": QUANTITY, "Time": TIME, "MicroTime": MICRO_TIME}


def ref(name):
    return {"$ref": "#/components/schemas/" + name}


class Generator:
    def __init__(self):
        self.files = {}  # stem -> parsed yaml
        self.aliases = {}  # "metav1" -> stem
        self.schemas = {}

    def load(self, path):
        with open(path) as f:
            doc = yaml.safe_load(f)
        stem = doc["file"]
        self.files[stem] = doc
        if "namespace" in doc:
            self.aliases[doc["namespace"]] = stem

    def resolve_type(self, stem, type_name):
        """The OpenAPI schema of a field type written as in the schema files."""
        if isinstance(type_name, dict):
            type_name = type_name["type"]
        if type_name.startswith("?"):
            type_name = type_name[1:]
        if type_name.startswith("[]"):
            return {"type": "array", "items": self.resolve_type(stem, type_name[2:])}
        if type_name.startswith("map["):
            inner = type_name[4:-1]
            return {"type": "object", "additionalProperties": self.resolve_type(stem, inner)}
        if type_name in SCALARS:
            return dict(SCALARS[type_name])
        if type_name in REFS:
            return ref(REFS[type_name])
        if "." in type_name:
            alias, name = type_name.split(".", 1)
            target = self.aliases.get(alias)
            if target is None:
                sys.exit("unknown package alias %r in %s" % (alias, type_name))
            return ref(PACKAGES[target] + "." + name)
        return ref(PACKAGES[stem] + "." + type_name)

    def generate(self, upstream_fields):
        self.schemas[QUANTITY] = {
            "description": "Quantity is a fixed-point representation of a number.",
            "oneOf": [{"type": "string"}, {"type": "number"}],
        }
        self.schemas[TIME] = {"description": "Time in RFC 3339 form.", "type": "string",
                              "format": "date-time"}
        self.schemas[MICRO_TIME] = {"description": "Time with microsecond precision.",
                                    "type": "string", "format": "date-time"}
        for stem in sorted(self.files):
            doc = self.files[stem]
            package = PACKAGES[stem]
            group = doc.get("group", "")
            if group == "meta.k8s.io":
                group = ""
            version = doc.get("version", "v1")
            extra = upstream_fields.get(stem, {})
            for type_name in sorted(doc.get("types", {})):
                spec = doc["types"][type_name]
                properties = {}
                if spec.get("kind"):
                    properties["apiVersion"] = {
                        "description": "APIVersion defines the versioned schema of this "
                                       "representation of an object.",
                        "type": "string"}
                    properties["kind"] = {
                        "description": "Kind is a string value representing the REST resource "
                                       "this object represents.",
                        "type": "string"}
                for field, field_type in (spec.get("fields") or {}).items():
                    schema = self.resolve_type(stem, field_type)
                    if "$ref" in schema:
                        schema = {"allOf": [schema]}
                    properties[field] = schema
                for field in extra.get(type_name, []):
                    properties.setdefault(field, {
                        "description": "Kept verbatim by draplane (not modelled).",
                        "x-kubernetes-preserve-unknown-fields": True})
                schema = {"description": spec.get("doc", ""), "type": "object",
                          "properties": properties}
                if spec.get("kind"):
                    schema["x-kubernetes-group-version-kind"] = [
                        {"group": group, "kind": type_name, "version": version}]
                self.schemas[package + "." + type_name] = schema
                if spec.get("list"):
                    list_name = spec["list"]
                    self.schemas[package + "." + list_name] = {
                        "description": "A list of " + type_name + " objects.",
                        "type": "object",
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"allOf": [ref(PACKAGES["meta_v1"] + ".ListMeta")]},
                            "items": {"type": "array", "items": ref(package + "." + type_name)},
                        },
                        "x-kubernetes-group-version-kind": [
                            {"group": group, "kind": list_name, "version": version}],
                    }
        return self.schemas


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-schema", required=True)
    parser.add_argument("--server-schema", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    gen = Generator()
    for path in sorted(glob.glob(os.path.join(args.api_schema, "*.yaml"))):
        gen.load(path)
    upstream_fields = {}
    for path in sorted(glob.glob(os.path.join(args.server_schema, "*.yaml"))):
        if os.path.basename(path) == "upstream_fields.yaml":
            with open(path) as f:
                upstream_fields = yaml.safe_load(f)
            continue
        gen.load(path)
    schemas = gen.generate(upstream_fields)
    text = json.dumps(schemas, sort_keys=True, separators=(",", ":"))
    if ")openapi\"" in text:
        sys.exit("schema text contains the raw string delimiter")
    out = (
        "// GENERATED at build time by src/server/openapi/gen_openapi_schemas.py from\n"
        "// src/api/schema/*.yaml and src/server/openapi/schema/*.yaml. DO NOT EDIT.\n"
        "#include \"server/openapi/openapi.h\"\n\n"
        "namespace draplane::server::openapi::internal {\n\n"
        "extern const char kComponentSchemasJson[];\n"
        "const char kComponentSchemasJson[] = R\"openapi(" + text + ")openapi\";\n\n"
        "}  // namespace draplane::server::openapi::internal\n")
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(out)
    os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
