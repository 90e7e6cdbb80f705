"""What an agent sees of a verb as an MCP tool, and how its call and answer pass through (ADR 0033).

- **Annotations** per the MCP spec, from the verb's declaration: ``readOnlyHint`` for an assertive act;
  for a write, ``destructiveHint`` when it erases (``@pack.verb(erases=True)``: a forget; every other write adds a
  version, an edge or a mark and keeps the history) and ``idempotentHint`` for a declaration or an erasure (the
  same call again changes nothing more). ``openWorldHint`` is false: a verb reaches only the store.
- **Parameters** (``McpTool.params``, from the pack's ``palimpsest_mcp_tools`` hook; ADR 0035): under ``--tools
  core`` a tool listed there shows only those parameters; ``--tools all`` or naming the tool shows them all. A
  parameter the listed schema does not show is refused (invalid_params naming the ones it takes), so the schema an
  agent reads is the contract it gets.
- **Names** (``McpTool.renamed``): one meaning per parameter name across the tools; a renamed parameter is shown
  and taken under its new name, always.
- **Compact answers** (``McpTool.compact``): the tool answers each item of one list with a few fields (dotted
  paths into the item, floats rounded) and a few top-level fields; ``detail: true`` in the call gives the whole
  result. An answer whose shape does not fit goes out whole.
- **Output schema**: with ``[mcp] output_schemas`` each tool lists its result's schema (a compact tool: either
  shape) and its answers carry the result as structured content too, as the spec then requires; without it the
  answer is the JSON text alone, the same data once instead of twice.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from palimpsest_memory.runtime import McpTool, VerbSpec, errors
from palimpsest_memory.runtime.pack import Act
from palimpsest_memory.runtime.adapters.serving import success, tool_name

DETAIL = "detail"
DETAIL_SCHEMA = {"type": "boolean", "default": False,
                 "description": "True for every field of each result (the full record); by default each result "
                                "carries only the fields listed above, to keep answers short."}


@dataclass(frozen=True)
class Compact:
    items: str  # the result's list field
    fields: dict[str, str]  # answer field -> dotted path in an item
    keep: tuple[str, ...] = ()  # top-level fields kept (left out when null or false)
    digits: int = 3  # floats rounded to this many decimals

    def project(self, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get(self.items), list):
            return data
        out = {k: data[k] for k in self.keep if data.get(k) not in (None, False)}
        out[self.items] = [self._item(item) for item in data[self.items]]
        return out

    def _item(self, item: Any) -> dict[str, Any]:
        row = {}
        for name, path in self.fields.items():
            value = item
            for part in path.split("."):
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, float):
                value = round(value, self.digits)
            if value is not None:
                row[name] = value
        return row

    def schema(self, full: dict[str, Any]) -> dict[str, Any]:
        """The compact answer's JSON schema, each field typed as the full result's schema types it."""
        item = _at(full, full, [self.items, "[]"])
        fields = {name: _strip(_at(full, item, path.split("."))) for name, path in self.fields.items()}
        props = {k: _strip(_at(full, full, [k])) for k in self.keep}
        props[self.items] = {"type": "array", "items": {"type": "object", "properties": fields}}
        return {"type": "object", "properties": props, "required": [self.items]}


def _deref(root: dict[str, Any], schema: Any) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = root.get("$defs", {}).get(schema["$ref"].rsplit("/", 1)[-1], {})
    if isinstance(schema, dict) and "anyOf" in schema:
        kept = [s for s in schema["anyOf"] if s != {"type": "null"}]
        schema = _deref(root, kept[0]) if len(kept) == 1 else schema
    return schema


def _at(root: dict[str, Any], schema: Any, path: list[str]) -> Any:
    for part in path:
        schema = _deref(root, schema)
        schema = schema.get("items", {}) if part == "[]" else schema.get("properties", {}).get(part, {})
    return _deref(root, schema)


def _strip(schema: Any) -> Any:
    return {k: v for k, v in schema.items() if k in ("type", "format", "enum")} if isinstance(schema, dict) else {}


@dataclass
class ToolView:
    """A verb as one MCP tool: its listing, and the way in (arguments) and out (answer) of a call."""

    spec: VerbSpec
    tool: types.Tool
    shown: set[str]  # parameter names as the tool lists them
    renamed: dict[str, str] = field(default_factory=dict)  # listed name -> the verb's name
    compact: Compact | None = None
    trimmed: bool = False  # some of the verb's parameters are not listed (--tools core)

    def arguments(self, given: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """The verb's params from a call's arguments, and whether the whole result was asked for."""
        args = dict(given)
        detail = args.pop(DETAIL, False) if self.compact is not None else False
        unknown = sorted(set(args) - self.shown)
        if unknown:
            hints = {old: new for new, old in self.renamed.items()}
            said = ", ".join(f"{u} (now {hints[u]})" if u in hints else u for u in unknown)
            raise errors.InvalidParams(
                f"{self.tool.name} takes no parameter {said}; it takes {', '.join(sorted(self.shown))}"
                + (" (start the server with --tools all for every parameter of the verb)" if self.trimmed else ""),
                verb=self.spec.full_name, details={"errors": [{"loc": [u], "msg": "not a parameter of this tool"}
                                                              for u in unknown]})
        if not isinstance(detail, bool):
            raise errors.InvalidParams(f"{DETAIL} must be true or false, got {detail!r}", verb=self.spec.full_name,
                                       details={"errors": [{"loc": [DETAIL], "msg": "not a boolean"}]})
        return {self.renamed.get(k, k): v for k, v in args.items()}, detail

    def answer(self, data: Any, detail: bool) -> types.CallToolResult:
        if self.compact is not None and not detail:
            data = self.compact.project(data)
        text = json.dumps(success(self.spec.full_name, data), separators=(",", ":"), ensure_ascii=False)
        structured = data if self.tool.output_schema is not None else None
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def annotations(spec: VerbSpec) -> types.ToolAnnotations:
    if not spec.writes:
        return types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    return types.ToolAnnotations(read_only_hint=False, destructive_hint=spec.erases,
                                 idempotent_hint=spec.act is Act.DECLARATION or spec.erases, open_world_hint=False)


def tool_view(spec: VerbSpec, view: McpTool | None, *, core: bool, output_schema: bool, description: str,
              input_schema: dict[str, Any]) -> ToolView:
    """The tool of ``spec`` as this server lists it (``view``: what its pack says of it; ``input_schema``: the params
    model's, already compacted)."""
    name = tool_name(spec.full_name)
    schema = copy.deepcopy(input_schema)
    props: dict[str, Any] = schema.setdefault("properties", {})
    if core and view is not None and view.params is not None:
        keep = [p for p in view.params if p in props]
        schema["properties"] = props = {p: props[p] for p in keep}
        schema["required"] = [r for r in schema.get("required", []) if r in props]
    renamed: dict[str, str] = {}
    for old, new in (view.renamed if view is not None else {}).items():
        if old in props and new not in props:
            schema["properties"] = props = {(new if k == old else k): v for k, v in props.items()}
            schema["required"] = [new if r == old else r for r in schema.get("required", [])]
            renamed[new] = old
    shape = view.compact if view is not None else None
    compact = None if shape is None else Compact(items=shape.items, fields=dict(shape.fields), keep=tuple(shape.keep),
                                                 digits=shape.digits)
    if compact is not None:
        props[DETAIL] = DETAIL_SCHEMA
    if not schema.get("required"):
        schema.pop("required", None)
    out_schema = None
    if output_schema:
        full = spec.result_model.model_json_schema(mode="serialization")
        if compact is None:
            out_schema = full
        else:  # either shape: compact by default, the whole result with detail
            brief = compact.schema(full)
            out_schema = {"type": "object", "$defs": full.pop("$defs", {}), "anyOf": [brief, full]}
    tool = types.Tool(name=name, title=spec.full_name, description=description, input_schema=schema,
                      output_schema=out_schema, annotations=annotations(spec))
    trimmed = bool(set(spec.params_model.model_fields) - set(renamed.values()) - set(props))
    return ToolView(spec=spec, tool=tool, shown=set(props) - {DETAIL}, renamed=renamed, compact=compact,
                    trimmed=trimmed)
