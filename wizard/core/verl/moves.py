"""Keys that moved or vanished between verl releases (data from resources/verl-moves.yaml)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KeyMove:
    old: str  # a key or a key prefix ending in ".*"
    new: str | None  # same shape; None when the key is gone with no replacement
    note: str = ""


@dataclass
class Moves:
    version: str
    moves: list[KeyMove]

    @classmethod
    def from_dict(cls, doc: dict) -> Moves:
        return cls(
            version=str(doc["version"]),
            moves=[KeyMove(old=m["old"], new=m.get("new"), note=m.get("note", "")) for m in doc["moves"]],
        )

    def lookup(self, key: str) -> tuple[str | None, str] | None:
        """(new key, note) for an old key, or None when the key did not move."""
        for m in self.moves:
            if m.old.endswith(".*"):
                prefix = m.old[:-1]
                if key.startswith(prefix):
                    rest = key[len(prefix) :]
                    return ((m.new[:-1] + rest) if m.new else None, m.note)
            elif key == m.old:
                return (m.new, m.note)
        return None
