#!/usr/bin/env python3
"""harness/scenario.schema.json against the scenario files.

Every file of the corpus (scenarios/) and of the test corpora, and the files
`streamsan test --init` writes, must validate; files that are malformed in a
way a schema can see must not; and `streamsan test --print-schema` must print
this very schema. The schema is what an editor's YAML language server checks
as one types (docs/scenarios.md, "Editor support"), so a schema that refuses a
valid file, or accepts a misspelled key, misleads the user.

Validation uses the `jsonschema` package (Draft 7, which YAML language
servers support) and PyYAML; tools/setup installs both.
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest

try:
    import jsonschema
    import yaml
except ImportError as e:  # not a skip: CI must run this test
    sys.exit(f"schema_test.py: {e}; run tools/setup (it installs python3-jsonschema and "
             "python3-yaml)")


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML speaks YAML 1.1, where `off` and `yes` are booleans; yaml-cpp
    (the parser of streamsan) and YAML language servers read them as strings,
    as YAML 1.2 does. Only true/false are booleans here."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool",
    __import__("re").compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))

SOURCE = pathlib.Path(os.environ["STREAMSAN_SOURCE_ROOT"])
SCHEMA_FILE = SOURCE / "harness" / "scenario.schema.json"
EXE = os.environ.get("STREAMSAN_EXE", "")


def load(path):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Yaml12Loader)


class ScenarioSchema(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
        jsonschema.Draft7Validator.check_schema(cls.schema)
        cls.validator = jsonschema.Draft7Validator(cls.schema)

    def errors(self, document):
        return sorted(self.validator.iter_errors(document), key=lambda e: list(e.path))

    def assert_valid(self, path):
        errors = self.errors(load(path))
        self.assertFalse(errors, f"{path}: " + "; ".join(
            f"at {'/'.join(map(str, e.absolute_path)) or 'top'}: {e.message}" for e in errors[:3]))

    def test_every_corpus_file_validates(self):
        files = sorted((SOURCE / "scenarios").rglob("*.yaml"))
        self.assertGreaterEqual(len(files), 60)
        for f in files:
            with self.subTest(file=str(f.relative_to(SOURCE))):
                self.assert_valid(f)

    def test_test_corpora_validate(self):
        for f in sorted((SOURCE / "tests" / "harness" / "wrong_expectations").glob("*.yaml")):
            with self.subTest(file=f.name):
                self.assert_valid(f)

    def test_init_templates_validate(self):
        if not EXE:
            self.skipTest("STREAMSAN_EXE is not set")
        with tempfile.TemporaryDirectory() as d:
            for args in (["--init", "alone"], ["--init", "pair_race", "--racy"]):
                subprocess.run([EXE, "test", *args], cwd=d, check=True, capture_output=True)
            files = sorted(pathlib.Path(d).glob("*.yaml"))
            self.assertEqual([f.name for f in files],
                             ["alone.yaml", "pair_fixed.yaml", "pair_race.yaml"])
            for f in files:
                with self.subTest(file=f.name):
                    self.assert_valid(f)

    def test_files_a_schema_can_refuse_are_refused(self):
        broken = SOURCE / "tests" / "harness" / "broken"
        expected = {
            "unknown_key.yaml": "Additional properties are not allowed ('strem' was unexpected)",
            "unknown_operation.yaml": "'sync' is not one of ['launch', 'memcpy',",
            "bad_number.yaml": "'four' is not of type 'integer'",
            "missing_expect.yaml": "'expect' is a required property",
        }
        for name, message in expected.items():
            with self.subTest(file=name):
                errors = self.errors(load(broken / name))
                self.assertTrue(any(message in e.message for e in errors),
                                [e.message for e in errors])

    def test_misspellings_are_refused(self):
        good = load(SOURCE / "scenarios" / "stream" / "side_stream_sum_fixed.yaml")
        self.assertFalse(self.errors(good))
        for change in ("op", "key", "value", "kernel_param"):
            bad = json.loads(json.dumps(good))
            if change == "op":
                bad["operations"][0]["op"] = "copy"
            elif change == "key":
                bad["buffers"][0]["fil"] = bad["buffers"][0].pop("fill", 0)
            elif change == "value":
                bad["streams"] = [{"name": "s", "flags": "nonblocking"}]
            else:
                launch = next(o for o in bad["operations"] if o["op"] == "launch")
                launch["buffer"] = "A"
            with self.subTest(change=change):
                self.assertTrue(self.errors(bad))

    def test_print_schema_prints_this_schema(self):
        if not EXE:
            self.skipTest("STREAMSAN_EXE is not set")
        out = subprocess.run([EXE, "test", "--print-schema"], check=True, capture_output=True,
                             text=True).stdout
        self.assertEqual(json.loads(out), self.schema)


if __name__ == "__main__":
    unittest.main(verbosity=2)
