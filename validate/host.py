"""The machine the models ran on, for a table's header."""
import os
import platform


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine():
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "hostname": platform.node()}
