"""gpuperf.hardware"""
