"""The bundle's program: the same front door as the ``verl-wizard`` console script (no arguments: the GUI).

Before the wizard starts, the environment its children inherit is given back to the user. The PyInstaller
bootloader points LD_LIBRARY_PATH at the bundle's _internal/ (its libstdc++, OpenSSL, zlib, ICU...) and
PySide6's runtime hook points QT_PLUGIN_PATH/QML2_IMPORT_PATH there. This process no longer needs them (the
dynamic loader read LD_LIBRARY_PATH when the program started; PySide6 finds its plugins through the qt.conf
it embeds), but every program the wizard starts would: the user's Python running a probe, verl's trainer,
Ray. With the bundle's libraries first on their path, torch or vLLM can load the wrong libstdc++
("GLIBCXX_3.4.xx not found") or OpenSSL.
"""

import os
import sys


def restore_user_environment() -> None:
    bundle = getattr(sys, "_MEIPASS", None)
    if not bundle:
        return
    original = os.environ.pop("LD_LIBRARY_PATH_ORIG", None)
    if original is not None:
        os.environ["LD_LIBRARY_PATH"] = original
    else:
        os.environ.pop("LD_LIBRARY_PATH", None)
    for name in ("QT_PLUGIN_PATH", "QML2_IMPORT_PATH"):
        if os.environ.get(name, "").startswith(bundle):
            del os.environ[name]


if __name__ == "__main__":
    restore_user_environment()
    from wizard.app import main

    sys.exit(main())
