print("scened: not yet")
