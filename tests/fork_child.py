"""A helper the fork tests paste into their scripts (tests/plugin and tests/cases import it)."""

# Pasted at the top of fork scripts: runs ``fn`` in a forked child and returns its JSON result,
# or {"ok": False, "error": "timeout"} after ``timeout`` seconds (the child is then killed).
FORK_HELPER = """
import json, os, select, signal, time

def in_child(fn, timeout=10.0):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = {"ok": True, "value": fn()}
        except BaseException as error:
            out = {"ok": False, "error": repr(error)}
        os.write(w, json.dumps(out).encode())
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        left = deadline - time.monotonic()
        ready = select.select([r], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return {"ok": False, "error": "timeout: the child hung"}
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data) if data else {"ok": False, "error": "the child died without a result"}
"""
