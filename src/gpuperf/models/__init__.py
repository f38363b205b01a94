"""gpuperf.models"""
