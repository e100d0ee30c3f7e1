"""Dataset schemas and loaders."""

from dpiw.data.datasets import load_raw
from dpiw.data.schema import Column, Schema, load_schema

__all__ = ["Column", "Schema", "load_raw", "load_schema"]
