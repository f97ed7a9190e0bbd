"""minds-operator: minds that look after infrastructure under strict, inspectable authority."""

__version__ = "0.1.0"
