"""The file to hand to mitmdump: ``mitmdump -s addon/blackbox_addon.py --set blackbox_mode=record ...``.

It only builds the addon; everything else is in the ``blackbox_mitm`` package
(install the project first: ``make setup`` or ``pip install -e .``).

    mitmdump -s addon/blackbox_addon.py \\
        --set blackbox_mode=record --set blackbox_cassette=runs/weather.json
    mitmdump -s addon/blackbox_addon.py \\
        --set blackbox_mode=replay --set blackbox_cassette=runs/weather.json --set blackbox_report=report.json
"""

from blackbox_mitm.proxy.addon import BlackboxAddon
from blackbox_mitm.proxy.contentview import register as _register_contentview

_register_contentview()  # mitmweb's "Blackbox" view of each model call: its neutral step (docs/view.md)

addons = [BlackboxAddon()]
