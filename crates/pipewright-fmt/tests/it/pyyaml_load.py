"""Loads YAML texts the way the reference runtimes do (PyYAML, YAML 1.1) and prints what each
text means as JSON, for tests/pyyaml.rs.

stdin: a JSON list of {"text": str, "loader": "recipe" | "pipeline"}.
stdout: a JSON list, one entry per input: {"ok": [document, ...]} or {"error": message}.

"recipe" is `yaml.safe_load_all`, as the recipe runner reads files. "pipeline" is the pipeline
runtime's loader: SafeLoader with `yes/no/on/off` no longer booleans (so `on:` is a key) and a
constructor for `!expr`.

JSON cannot say everything YAML can, so values are encoded: a mapping is an object whose keys
are strings as they are, other keys `!<type>:<text>` (`!bool:true`, `!int:3`, a float by its
bits); a float is {"!float": the hex of its bits} ({"!float": repr} for nan and inf), an
integer JSON numbers would round is {"!int": str}; a tagged scalar is {"!<tag>": text};
anything else PyYAML builds (dates, bytes, sets) is {"!<python type>": repr}, which no
YAML 1.2 value equals.

Exit status 3 when PyYAML is missing, so the caller can say how to install it.
"""

import json
import math
import re
import struct
import sys

try:
    import yaml
except ImportError:
    sys.stderr.write("PyYAML is not installed\n")
    sys.exit(3)


class PipelineLoader(yaml.SafeLoader):
    pass


# The runtime's change to SafeLoader: only true/false (three casings) are booleans.
PipelineLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
PipelineLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"),
)


class Tagged:
    def __init__(self, tag, value):
        self.tag = tag
        self.value = value


def construct_local(loader, suffix, node):
    if isinstance(node, yaml.ScalarNode):
        return Tagged("!" + suffix, loader.construct_scalar(node))
    if isinstance(node, yaml.SequenceNode):
        return Tagged("!" + suffix, loader.construct_sequence(node, deep=True))
    return Tagged("!" + suffix, loader.construct_mapping(node, deep=True))


# The pipeline runtime knows `!expr` only; the recipe runner no local tag at all. Both are
# registered here so a tag is compared rather than reported as a load failure: the formatter
# keeps tags as written, and whether a tag is allowed is the checker's business.
for loader in (yaml.SafeLoader, PipelineLoader):
    loader.add_multi_constructor("!", construct_local)


def key(k):
    if isinstance(k, str):
        return k
    if isinstance(k, bool):
        return "!bool:%s" % ("true" if k else "false")
    if k is None:
        return "!null:"
    if isinstance(k, int):
        return "!int:%d" % k
    if isinstance(k, float):
        # Bits, not a decimal spelling the Rust side would have to reproduce.
        return "!float:nan" if math.isnan(k) else "!float:" + struct.pack(">d", k).hex()
    return "!%s:%r" % (type(k).__name__, encode(k))


def encode(v):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v if -(2**53) <= v <= 2**53 else {"!int": str(v)}
    if isinstance(v, float):
        # By its bits: the reader's decimal parsing may round the last digit (1.5e+33).
        if math.isfinite(v):
            return {"!float": struct.pack(">d", v).hex()}
        return {"!float": repr(v)}
    if isinstance(v, list):
        return [encode(x) for x in v]
    if isinstance(v, dict):
        return {key(k): encode(x) for k, x in v.items()}
    if isinstance(v, Tagged):
        return {v.tag: encode(v.value)}
    return {"!" + type(v).__name__: repr(v)}


def load(text, loader):
    cls = PipelineLoader if loader == "pipeline" else yaml.SafeLoader
    try:
        return {"ok": [encode(d) for d in yaml.load_all(text, Loader=cls)]}
    except Exception as e:  # any failure is a finding for the caller to report
        return {"error": "%s: %s" % (type(e).__name__, e)}


def main():
    jobs = json.load(sys.stdin)
    json.dump([load(j["text"], j["loader"]) for j in jobs], sys.stdout)


main()
