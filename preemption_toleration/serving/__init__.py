"""What the server and every feature's adapter share: the shape of an endpoint and its handler's reply
(`handling`), the server's metrics (`webhook_metrics`), and work done again every so often (`periodic`)."""
