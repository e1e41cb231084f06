"""Stand-in for opacus (differential privacy for PyTorch), written for pfl's side-by-side
harness: the package is not installable here. The FedPerfix code imports PrivacyEngine in
system/utils/privacy.py and uses it only when -dp/--privacy is set (default off; none of the
harness's runs sets it). Constructing one raises, so a run that asked for differential privacy
stops instead of silently training without it: no effect on results of runs that finish."""


class PrivacyEngine:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("opacus stand-in: differential privacy (-dp) is not available in this harness")
