"""gpuperf.decisions"""
