"""gpuperf.features"""
