"""What this user can do with the local Docker engine, asked of its API directly (no docker SDK, no CLI:
neither is needed to tell whether the socket answers), every call under a timeout: the socket and its
permissions, /_ping and /info (runtimes, CDI spec folders, root folder), and with an image, one short
container asked for the GPUs as `docker run --gpus all` asks, removed afterwards."""

from __future__ import annotations

import contextlib
import grp
import http.client
import json
import os
import pwd
import socket
import struct
import time
from typing import Any
from urllib.parse import quote, urlparse

DEFAULT_HOST = "unix:///var/run/docker.sock"
# Unversioned paths: the engine answers in its own API version, so an old or new engine both answer
# (DeviceRequests, what --gpus sends, came in API 1.40, Engine 19.03).
API = ""
GPU_COMMAND = ["nvidia-smi", "-L"]  # injected by the NVIDIA runtime; one line per GPU it exposes


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


class Engine:
    """One Docker engine endpoint (DOCKER_HOST: unix:// or tcp://), each call with its own timeout."""

    def __init__(self, host: str) -> None:
        self.host = host
        url = urlparse(host)
        self.scheme = url.scheme
        self.path = url.path if url.scheme == "unix" else None
        self.address = (url.hostname or "localhost", url.port or 2375) if url.scheme == "tcp" else None

    def call(
        self, method: str, url: str, body: Any = None, timeout: float = 5.0
    ) -> tuple[int, bytes, str | None]:
        """(HTTP status, body, Content-Type); OSError / http.client errors as raised."""
        if self.path is not None:
            conn: http.client.HTTPConnection = _UnixConnection(self.path, timeout)
        elif self.address is not None:
            conn = http.client.HTTPConnection(*self.address, timeout=timeout)
        else:
            raise OSError(f"DOCKER_HOST={self.host}: only unix:// and tcp:// endpoints are read")
        try:
            data = json.dumps(body).encode() if body is not None else None
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, API + url, body=data, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read(8 << 20), resp.getheader("Content-Type")
        finally:
            conn.close()


def _message(status: int, body: bytes) -> str:
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(body).get("message") or "").strip()[:400] or f"HTTP {status}"
    return body.decode("utf-8", "replace").strip()[:400] or f"HTTP {status}"


def user() -> dict[str, Any]:
    """Who asks: name, uid, the groups this process holds now (a group added since the last log-in is
    not among them)."""
    uid = os.getuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    groups = []
    for gid in sorted(set(os.getgroups()) | {os.getgid()}):
        try:
            groups.append(grp.getgrgid(gid).gr_name)
        except KeyError:
            groups.append(str(gid))
    return {"name": name, "uid": uid, "groups": groups}


def socket_facts(host: str) -> dict[str, Any]:
    """The socket of a unix:// endpoint: exists, its group and mode, whether this process may use it,
    and whether the user is listed in the socket's group (/etc/group) though this session lacks it."""
    url = urlparse(host)
    if url.scheme != "unix":
        return {"host": host, "path": None}
    path = url.path
    out: dict[str, Any] = {"host": host, "path": path}
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {**out, "exists": False}
    except OSError as exc:
        return {**out, "exists": None, "error": f"{path}: {exc.strerror}"}
    out["exists"] = True
    out["mode"] = oct(st.st_mode & 0o777)
    try:
        group = grp.getgrgid(st.st_gid)
        out["group"] = group.gr_name
        me = user()["name"]
        out["listed_in_group"] = me in group.gr_mem
    except KeyError:
        out["group"] = str(st.st_gid)
    out["access"] = os.access(path, os.R_OK | os.W_OK)
    return out


def engine_facts(host: str, timeout: float) -> dict[str, Any]:
    """/_ping then /info: {"answered": True, "version", "runtimes", "default_runtime", "root_dir",
    "cdi_spec_dirs", "architecture"} or {"answered": False, "error": why}."""
    engine = Engine(host)
    try:
        status, body, _ = engine.call("GET", "/_ping", timeout=timeout)
        if status != 200:
            return {"answered": False, "error": f"/_ping: {_message(status, body)}"}
        status, body, _ = engine.call("GET", "/info", timeout=timeout)
    except PermissionError as exc:
        return {"answered": False, "error": f"permission denied on {host} ({exc.strerror})", "denied": True}
    except FileNotFoundError:
        return {"answered": False, "error": f"no socket at {host}"}
    except (OSError, http.client.HTTPException) as exc:
        why = (
            "no answer within the timeout"
            if isinstance(exc, TimeoutError)
            else str(exc) or type(exc).__name__
        )
        return {"answered": False, "error": f"{host}: {why}"[:300]}
    if status != 200:
        return {"answered": True, "error": f"/info: {_message(status, body)}"}
    try:
        info = json.loads(body)
    except ValueError:
        return {"answered": True, "error": "/info: not JSON"}
    return {
        "answered": True,
        "version": info.get("ServerVersion"),
        "runtimes": sorted((info.get("Runtimes") or {}).keys()),
        "default_runtime": info.get("DefaultRuntime"),
        "root_dir": info.get("DockerRootDir"),
        "cdi_spec_dirs": list(info.get("CDISpecDirs") or []),
        "architecture": info.get("Architecture"),
    }


def _demux(raw: bytes) -> str:
    """A container's logs as the API streams them without a TTY: 8-byte frame headers, then payload."""
    out, i = [], 0
    while i + 8 <= len(raw) and raw[i] in (0, 1, 2) and raw[i + 1 : i + 4] == b"\0\0\0":
        (size,) = struct.unpack(">I", raw[i + 4 : i + 8])
        out.append(raw[i + 8 : i + 8 + size])
        i += 8 + size
    text = b"".join(out) if out else raw
    return text.decode("utf-8", "replace")


def gpu_container(host: str, image: str, timeout: float) -> dict[str, Any]:
    """Run GPU_COMMAND in `image` with every GPU requested (`docker run --gpus all`), wait at most
    `timeout` seconds, keep its exit code and output, and remove the container whatever happened.
    The image is not pulled: one that is not here is said so."""
    started = time.monotonic()
    result = _gpu_container(Engine(host), image, timeout, started)
    return {**result, "seconds": round(time.monotonic() - started, 3)}


def _gpu_container(engine: Engine, image: str, timeout: float, started: float) -> dict[str, Any]:
    out: dict[str, Any] = {"image": image, "command": GPU_COMMAND}
    create = {
        "Image": image,
        "Entrypoint": [],
        "Cmd": GPU_COMMAND,
        "HostConfig": {"DeviceRequests": [{"Driver": "", "Count": -1, "Capabilities": [["gpu"]]}]},
    }
    cid = None
    try:
        status, body, _ = engine.call("POST", "/containers/create", create, timeout=min(timeout, 30))
        if status == 404:
            return {**out, "error": f"image {image} is not on this machine (docker pull {image})"}
        if status != 201:
            return {**out, "error": f"create: {_message(status, body)}"}
        cid = json.loads(body)["Id"]
        status, body, _ = engine.call("POST", f"/containers/{cid}/start", timeout=min(timeout, 30))
        if status not in (204, 304):
            return {**out, "error": f"start: {_message(status, body)}"}
        left = max(1.0, timeout - (time.monotonic() - started))
        try:
            status, body, _ = engine.call("POST", f"/containers/{cid}/wait", timeout=left)
        except TimeoutError:
            return {**out, "timed_out": True, "error": f"the container did not finish within {timeout:g} s"}
        if status == 200:
            out["exit_code"] = json.loads(body).get("StatusCode")
        status, body, _ = engine.call(
            "GET", f"/containers/{cid}/logs?stdout=1&stderr=1&tail=50", timeout=min(timeout, 10)
        )
        if status == 200:
            out["output"] = [ln for ln in _demux(body).splitlines() if ln.strip()][-20:]
        return out
    except (OSError, http.client.HTTPException, ValueError, KeyError) as exc:
        return {**out, "error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        if cid is not None:
            with contextlib.suppress(OSError, http.client.HTTPException):
                engine.call("DELETE", f"/containers/{quote(cid)}?force=1", timeout=10)
