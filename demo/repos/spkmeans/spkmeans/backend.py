"""Array backend selection: CuPy on the GPU, numpy on the CPU."""

import numpy


def get_array_module(device):
    if device.startswith("cuda"):
        import cupy

        cupy.cuda.Device(int(device.split(":")[1]) if ":" in device else 0).use()
        return cupy
    return numpy
