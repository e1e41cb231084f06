"""Stand-in for the package timm.models (see timm/__init__.py beside it): it only holds
vision_transformer, the one module of it that the FedPerfix code imports."""
