"""python -m torch_pjrt info: plugin, versions, devices, cache dir."""
import sys


def _info() -> int:
    import torch

    import torch_pjrt

    p = torch_pjrt.plugin()
    if p["error"]:
        print(f"torch_pjrt {torch_pjrt.__version__}: {p['error']}", file=sys.stderr)
        return 1
    d = torch_pjrt.info()
    cache = torch_pjrt.cache_dir() or "(off: TORCH_PJRT_CACHE_DIR is empty)"
    print(f"torch_pjrt       {d['torch_pjrt_version']}")
    print(f"torch            {d['torch_version']}")
    print(f"plugin           {d['plugin_path']}")
    print(f"platform         {d['platform']} {d['platform_version']}".rstrip())
    print("PJRT C API       plugin %d.%d, built with %d.%d" % (*d["pjrt_api_version"],
                                                             *d["pjrt_header_version"]))
    for line in d["attributes"].splitlines():
        print(f"attribute        {line}")
    opts = torch_pjrt._plugin.create_options(p["platform"])
    if opts:
        print("client options   " + ", ".join(f"{k}={v}" for k, v in opts))
    print(f"cache dir        {cache}")
    print(f"devices          {len(d['devices'])}")
    for dev in d["devices"]:
        print(f"  tpu:{dev['index']:<3} {dev['kind']}  {dev['description']}")
        try:
            free, total = torch.tpu.mem_get_info(dev["index"])
            print(f"         memory {free / 2**30:.1f} GiB free of {total / 2**30:.1f} GiB")
        except Exception as e:  # a plugin without memory statistics
            print(f"         memory unknown ({e})")
    if torch.accelerator.is_available():
        print(f"accelerator      {torch.accelerator.current_accelerator()}")
    if torch.distributed.is_available():
        from torch_pjrt import distributed

        print(f"distributed      c10d backend \"{distributed.BACKEND}\", transport "
              f"{distributed.transport_for(d['platform'])} across processes, "
              f"{distributed.transport_for(d['platform'], local=True)} between this "
              f"process's devices (local_groups)")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m torch_pjrt info")
        return 0 if argv else 2
    if argv[0] == "info":
        return _info()
    print(f"unknown command {argv[0]!r}; usage: python -m torch_pjrt info", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
