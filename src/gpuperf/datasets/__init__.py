"""gpuperf.datasets"""
