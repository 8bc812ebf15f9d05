"""What validation reads from a profile: its machine, and each runtime's record (interpreter,
threads, framework, dtype). Nothing read here reaches an estimate: truepeak reads the profile."""
import json
import re

from validate.errors import usage_error


def read_profile(path):
    """The profile's JSON document, or one line and exit 2."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as error:
        usage_error(f"--profile {path}: cannot read it ({error.strerror})")
    except ValueError as error:
        usage_error(f"--profile {path}: not JSON ({error})")
    if not isinstance(doc, dict) or not isinstance(doc.get("devices"), list):
        usage_error(f"--profile {path}: not a truepeak profile (no devices)")
    return doc


def cpu_device(doc):
    for device in doc.get("devices", []):
        if isinstance(device, dict) and device.get("kind") == "cpu":
            return device
    return None


def runtime_record(doc, key):
    """The CPU's record of runtime `key`, or None."""
    device = cpu_device(doc) or {}
    record = (device.get("runtimes") or {}).get(key)
    return record if isinstance(record, dict) else None


def missing_runtimes(doc, keys):
    return [key for key in keys if runtime_record(doc, key) is None]


def record_fields(key, record):
    """(python, threads) of a runtime record, or one line and exit 2: validation runs the models
    in the interpreter and with the threads the runtime was calibrated with."""
    python, threads = record.get("python"), record.get("threads")
    if not isinstance(python, str) or not python:
        usage_error(f"runtime {key}: its profile record names no interpreter (python); calibrate it again "
                    f"with truepeak calibrate --runtime {key}")
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        usage_error(f"runtime {key}: its profile record has no thread count (threads); calibrate it again "
                    f"with truepeak calibrate --runtime {key}")
    return python, threads


def slug(text, most=40):
    """A short lowercase file-name form of a label: letters, digits and dashes."""
    s = re.sub(r"[^a-z0-9]+", "-", (text or "").lower()).strip("-")
    return s[:most].rstrip("-") or "machine"


def machine_slug(doc):
    """The results folder of a profile's machine: its label, else its CPU model."""
    machine = doc.get("machine") or {}
    return slug(machine.get("label") or machine.get("cpu_model") or "")
