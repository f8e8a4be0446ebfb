"""A virtual phone: a recording served over the real adb transport protocol on loopback."""

from perception.simdevice.phone import Faults, Phone
from perception.simdevice.server import SimDevice

__all__ = ["Faults", "Phone", "SimDevice"]
