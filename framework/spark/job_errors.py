"""One readable line from a failed Spark job.

A job that fails reaches Python as a Py4J or PySpark exception whose text is
a Java stack trace, often with a Python traceback inside. A user needs the
one line that says what went wrong: a driver limit that was hit, or the
exception a Python worker raised. :func:`is_spark_failure` tells such
exceptions from lakesieve's own, and :func:`summarize` picks that line.
"""

from __future__ import annotations

import re

#: The last line of a Python traceback: ``ZeroDivisionError: division by zero``.
_PYTHON_ERROR = re.compile(r"^([A-Za-z_]\w*(?:Error|Exception)): (.+)$")
#: A Java exception line: ``Caused by: org.apache.spark.SparkException: ...``.
_JAVA_ERROR = re.compile(r"^(?:Caused by: )?((?:[a-z_]\w*\.)+[A-Z]\w*(?:Error|Exception)): (.+)$")
_STAGE = "Job aborted due to stage failure: "
_MAX_CHARS = 300


def is_spark_failure(exc: BaseException) -> bool:
    """Whether ``exc`` came out of Spark (Py4J or PySpark), not out of lakesieve's own checks."""
    module = type(exc).__module__ or ""
    return module.startswith(("py4j", "pyspark"))


def summarize(exc: BaseException) -> str:
    """The line of ``exc``'s text that names the cause, at most a few hundred characters.

    In order: a driver-side limit (``maxResultSize``, memory), the last
    exception a Python worker raised, the innermost Java exception, else the
    text's first line.
    """
    lines = [
        ln.strip()
        for ln in str(exc).splitlines()
        if ln.strip() and not ln.strip().startswith("at ")
    ]
    found = ""
    for ln in lines:
        if "maxResultSize" in ln or "OutOfMemoryError" in ln:
            found = ln.split(_STAGE, 1)[-1]
            break
    if not found:
        python = [ln for ln in lines if _PYTHON_ERROR.match(ln)]
        java = [m for m in (_JAVA_ERROR.match(ln) for ln in lines) if m]
        if python:
            found = python[-1]
        elif java:
            name, message = java[-1].groups()
            found = f"{name.rsplit('.', 1)[-1]}: {message.split(_STAGE, 1)[-1]}"
        else:
            found = lines[0] if lines else type(exc).__name__
    return found if len(found) <= _MAX_CHARS else found[: _MAX_CHARS - 3] + "..."
