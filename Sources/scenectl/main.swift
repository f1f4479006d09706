print("scenectl: not yet")
