"""The audit log file."""


def _value(value):
    text = str(value)
    # The shipper splits on spaces and on the first '='; such values must be quoted to stay one field.
    if not text or any(c in text for c in ' ="'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def format_line(event, **fields):
    """One audit-log line (without a trailing newline) for `event` and its fields."""
    parts = [f"msg={_value(event)}"]
    parts += [f"{key}={_value(fields[key])}" for key in sorted(fields)]
    return " ".join(parts)


def write_event(path, event, **fields):
    with open(path, "a", encoding="utf-8") as f:
        f.write(format_line(event, **fields) + "\n")
