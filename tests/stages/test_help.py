"""Every stage's --help renders and documents every flag (the parsers are introspected, not the text)."""

import argparse
import importlib
import pkgutil

import pytest

import dpiw.stages

STAGES = [m.name for m in pkgutil.iter_modules(dpiw.stages.__path__) if not m.name.startswith("_")]


def _parser(module) -> argparse.ArgumentParser:
    """The stage's parser, caught where parse_args would parse."""
    caught = {}

    def grab(self, args=None, namespace=None):
        caught["parser"] = self
        raise SystemExit(0)

    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = grab
    try:
        with pytest.raises(SystemExit):
            module.parse_args([])
    finally:
        argparse.ArgumentParser.parse_args = original
    return caught["parser"]


@pytest.mark.parametrize("name", STAGES)
def test_every_flag_has_help_and_help_renders(name):
    module = importlib.import_module(f"dpiw.stages.{name}")
    assert hasattr(module, "parse_args"), f"dpiw.stages.{name}: a stage takes its flags through parse_args"
    parser = _parser(module)
    flags = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    assert flags
    undocumented = [a.option_strings[0] for a in flags if not a.help]
    assert not undocumented, f"dpiw.stages.{name}: flags without help: {undocumented}"
    text = parser.format_help()  # a stray % in a help text would raise here
    assert all(a.option_strings[0] in text for a in flags)
