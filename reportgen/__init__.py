"""msreport: offline performance reports for distributed training on Ascend devices."""

__version__ = "0.1.0"
