"""gpuperf.evaluation"""
