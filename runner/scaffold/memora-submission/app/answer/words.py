"""The words a text is matched on (build, search and the answer share it: it lives with the answer, whose
container may read only /app/answer/ and its request): lower-case, three letters or more, common words left out."""

import re

COMMON = {"the", "and", "for", "you", "your", "are", "was", "what", "which", "who", "with", "that", "this", "does",
          "did", "have", "has", "now", "at", "moment", "their", "they", "them", "about", "from", "should", "would"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3 and w not in COMMON}
