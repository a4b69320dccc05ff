"""The file to hand to mitmdump: ``mitmdump -s addon/blackbox_addon.py --set blackbox_mode=record ...``.

It only builds the addon; everything else is in the ``blackbox_mitm`` package
(install the project first: ``make setup`` or ``pip install -e .``).

    mitmdump -s addon/blackbox_addon.py \\
        --set blackbox_mode=record --set blackbox_cassette=runs/weather.json
    mitmdump -s addon/blackbox_addon.py \\
        --set blackbox_mode=replay --set blackbox_cassette=runs/weather.json --set blackbox_report=report.json
"""

from blackbox_mitm.proxy.addon import BlackboxAddon

addons = [BlackboxAddon()]
