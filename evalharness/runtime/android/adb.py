"""A thin, strict wrapper of the ``adb`` client.

adb facts it handles: older adb does not pass the shell's exit status (so every shell command ends
with ``; echo RC=$?``, which is parsed), shell output may come with ``\\r\\n``, binary files travel
with ``adb push``/``adb pull`` only (never through a text pipe), and a missing, unauthorized or
offline device is a one-line error naming the fix.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from evalharness.core.errors import EvalHarnessError

_RC = re.compile(r"^RC=(\d+)\s*$", re.M)
_PROP = re.compile(r"^\[([^\]]+)\]: \[(.*)\]\s*$", re.M)
_STATE_HINTS = {
    "unauthorized": "accept the 'Allow USB debugging' prompt on the phone",
    "offline": "reconnect the cable or run `adb kill-server`",
    "no permissions": "fix the udev rules for the phone (see adb's 'no permissions' help)",
}


def tail(text: str, lines: int = 2) -> str:
    """The last ``lines`` lines of device output joined on one line, for one-line error messages."""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


class AdbError(EvalHarnessError):
    """adb or a command on the device failed."""


class Adb:
    def __init__(self, exe: str = "adb", serial: str = "", timeout_s: float = 3600.0) -> None:
        found = shutil.which(exe)
        if not found:
            raise AdbError(
                f"runner=adb: adb client {exe!r} not found; install Android platform-tools or set runner.adb"
            )
        self.exe, self.serial, self.timeout_s = found, serial, timeout_s

    def _run(self, *args: str, device: bool = True) -> str:
        cmd = [self.exe, *(("-s", self.serial) if device and self.serial else ()), *args]
        try:
            done = subprocess.run(cmd, capture_output=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise AdbError(f"adb {args[0]} timed out after {self.timeout_s:.0f} s") from None
        out = done.stdout.decode("utf-8", "replace").replace("\r\n", "\n")
        if done.returncode != 0:
            err = done.stderr.decode("utf-8", "replace").replace("\r\n", "\n").strip() or out.strip()
            raise AdbError(f"adb {args[0]} failed (exit {done.returncode}): {' '.join(err.split())[:300]}")
        return out

    def devices(self) -> dict[str, str]:
        """serial -> state (device, unauthorized, offline, ...) as ``adb devices`` lists them."""
        listed = {}
        for line in self._run("devices", device=False).splitlines()[1:]:
            serial, _, state = line.strip().partition("\t")
            if serial and state:
                listed[serial] = state.strip()
        return listed

    def check_device(self) -> str:
        """The serial to use; a one-line error when the device is missing, unauthorized or ambiguous."""
        listed = self.devices()
        if not listed:
            raise AdbError(
                "runner=adb: no Android device attached (`adb devices` lists none); "
                "connect a phone with USB debugging on"
            )
        if not self.serial:
            if len(listed) > 1:
                raise AdbError(
                    f"runner=adb: {len(listed)} devices attached ({', '.join(listed)}); "
                    "pick one with runner.serial=..."
                )
            self.serial = next(iter(listed))
        state = listed.get(self.serial)
        if state is None:
            raise AdbError(f"runner=adb: device {self.serial!r} not attached; attached: {', '.join(listed)}")
        if state != "device":
            hint = _STATE_HINTS.get(state, "check the phone and the cable")
            raise AdbError(f"runner=adb: device {self.serial} is {state}: {hint}")
        return self.serial

    def shell(self, command: str, check: bool = True) -> tuple[str, int]:
        """Run ``command`` in one ``adb shell``; (output with \\n line ends, its exit status)."""
        out = self._run("shell", f"{command}; echo RC=$?")
        codes = _RC.findall(out)
        if not codes:
            raise AdbError(f"adb shell printed no exit status (RC=) for: {command[:120]}")
        rc = int(codes[-1])
        text = out[: out.rfind("RC=")]
        if check and rc != 0:
            raise AdbError(f"on the device, `{command[:120]}` exited {rc}: {tail(text, 3)}")
        return text, rc

    def push(self, local: str, remote: str) -> None:
        self._run("push", local, remote)

    def pull(self, remote: str, local: str) -> None:
        self._run("pull", remote, local)

    def getprop(self) -> dict[str, str]:
        text, _ = self.shell("getprop")
        return dict(_PROP.findall(text))
