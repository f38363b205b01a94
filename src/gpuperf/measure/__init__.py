"""gpuperf.measure"""
