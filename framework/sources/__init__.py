"""What the two Spark data sources share, below both.

``format("lakesieve")`` (the JVM data source, whose Python half is
:mod:`lakesieve.spark_source`) and ``format("lakesieve_python")``
(:mod:`lakesieve.python_source`) open a table from the same options, refuse
the same unknown ones, and describe a scan in the same one line:
:mod:`.scan` holds that, so neither source imports the other.
"""
