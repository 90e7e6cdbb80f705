"""The verb catalog: who owns which verb, and who may call it."""
from __future__ import annotations

from typing import Any, Iterable

from palimpsest_memory.runtime.errors import Forbidden, PackLoadError, PackUnavailable, VerbNotFound
from palimpsest_memory.runtime.pack import Pack, VerbSpec, Visibility


class Catalog:
    """Every verb of the loaded packs, with the visibility and ``requires`` rules for reaching them."""

    def __init__(self, packs: Iterable[Pack], unavailable: dict[str, str] | None = None,
                 plugin_manager: Any = None) -> None:
        self.plugin_manager = plugin_manager
        self.packs: dict[str, Pack] = {}  # in dependency order
        self._verbs: dict[str, VerbSpec] = {}
        self.unavailable = dict(unavailable or {})  # pack name -> why it is not loaded
        for pack in packs:
            self.packs[pack.name] = pack
            for spec in pack.verbs.values():
                owner = self._verbs.get(spec.full_name)
                if owner is not None:
                    raise PackLoadError(
                        f"verb {spec.full_name!r} is claimed by two packs: {owner.pack!r} and {pack.name!r}",
                        details={"verb": spec.full_name, "packs": [owner.pack, pack.name]},
                    )
                self._verbs[spec.full_name] = spec
            for sub in pack.subscriptions:
                self._check_subscription(pack, sub.event)

    def _check_subscription(self, pack: Pack, event: str) -> None:
        """A subscription names a declared event of the pack itself or of a pack it requires (loaded before it)."""
        publisher, _, name = event.partition(".")
        if publisher != pack.name and publisher not in pack.requires:
            raise PackLoadError(f"pack {pack.name!r} subscribes to {event} but does not require pack {publisher!r}",
                                details={"pack": pack.name, "event": event})
        owner = pack if publisher == pack.name else self.packs.get(publisher)
        if owner is None or name not in owner.events:
            known = sorted(f"{publisher}.{e}" for e in (owner.events if owner else {}))
            raise PackLoadError(f"pack {pack.name!r} subscribes to {event}, which pack {publisher!r} does not "
                                f"declare", details={"pack": pack.name, "event": event, "declared": known})

    def events(self) -> dict[str, type]:
        """Every declared event ("<pack>.<name>") and its payload type, for introspection."""
        return {f"{p.name}.{e}": t for p in self.packs.values() for e, t in p.events.items()}

    def verbs(self, *, include_subhandlers: bool = False) -> list[VerbSpec]:
        """The catalog in a stable order (pack load order, then registration order)."""
        return [v for v in self._verbs.values() if include_subhandlers or v.visibility is Visibility.PUBLIC]

    def get(self, full_name: str) -> VerbSpec:
        spec = self._verbs.get(full_name)
        if spec is not None:
            return spec
        pack = full_name.split(".", 1)[0]
        if pack in self.unavailable:
            raise PackUnavailable(
                f"pack {pack!r} is not loaded: {self.unavailable[pack]}", verb=full_name, details={"pack": pack}
            )
        known = sorted(v for v in self._verbs if v.startswith(pack + ".")) or sorted(self._verbs)[:20]
        raise VerbNotFound(f"no verb named {full_name!r}", verb=full_name, details={"known": known})

    def resolve(self, full_name: str, *, caller_pack: str | None, internal: bool) -> VerbSpec:
        """Find a verb and check that this caller may reach it.

        From outside (``caller_pack`` None): public verbs, or sub-handlers with ``internal=True``.
        From a pack: its own verbs (sub-handlers included) and public verbs of packs it requires.
        """
        spec = self.get(full_name)
        if caller_pack is None:
            if spec.visibility is Visibility.SUBHANDLER and not internal:
                raise Forbidden(
                    f"{full_name} is a sub-handler of pack {spec.pack!r}; call it with internal=True "
                    "(CLI: --internal) to debug it",
                    verb=full_name,
                )
            return spec
        if spec.pack == caller_pack:
            return spec
        if spec.pack not in self.packs[caller_pack].requires:
            raise Forbidden(
                f"pack {caller_pack!r} calls {full_name} but does not require pack {spec.pack!r}",
                verb=full_name, details={"caller": caller_pack, "pack": spec.pack},
            )
        if spec.visibility is Visibility.SUBHANDLER:
            raise Forbidden(
                f"{full_name} is a sub-handler of pack {spec.pack!r}; pack {caller_pack!r} may not call it",
                verb=full_name,
            )
        return spec

    def contributions(self, hook: str) -> dict[str, list[Any]]:
        """What each loaded pack adds to the adapters through ``hook`` (``palimpsest_mcp_tools``,
        ``palimpsest_http_routes``, ``palimpsest_web_pages``), by pack, in load order, checked
        (:func:`contributions.check`). A pack that does not implement the hook is absent (not an empty list)."""
        from palimpsest_memory.runtime.contributions import check

        found: dict[str, list[Any]] = {}
        if self.plugin_manager is None:
            return found
        # each implementation is called on its own: pluggy's hook call would merge the packs' results and lose who
        # returned what (plugins are registered as "<pack>#<n>" by the loader)
        for impl in getattr(self.plugin_manager.hook, hook).get_hookimpls():
            pack = (impl.plugin_name or "").split("#")[0]
            if pack in self.packs:
                found.setdefault(pack, []).extend(check(pack, hook, impl.function()))
        return {name: found[name] for name in self.packs if name in found}

    def register_cli_commands(self, cli: Any, invocation: Any, groups: Any = None) -> None:
        """Let packs add their own CLI commands (the ``palimpsest_register_commands`` hook)."""
        if self.plugin_manager is not None:
            self.plugin_manager.hook.palimpsest_register_commands(cli=cli, invocation=invocation,
                                                                  groups=dict(groups or {}))
