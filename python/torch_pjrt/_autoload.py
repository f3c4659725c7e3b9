"""The `torch.backends` entry point. It lives apart from the package's
__init__ so that `import torch_pjrt` (which imports torch, which runs the
autoload) finds it even while torch_pjrt itself is still being imported."""


def _autoload() -> None:
    try:
        import torch_pjrt  # noqa: F401  (registers the device; a no-op when already importing)
    except Exception as e:  # a broken install must not break `import torch`
        import warnings

        warnings.warn(f"torch_pjrt failed to load, so the tpu device is unavailable: {e}")
