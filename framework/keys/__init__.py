"""How column values and locations are encoded in indexes.

- :mod:`.mapping`: the order-preserving map of a column value to a 64-bit integer;
- :mod:`.key_arrays`: the same map, vectorised over Arrow arrays;
- :mod:`.key_order`: exact, order-preserving key forms for comparing values on the driver;
- :mod:`.unique`: distinct values of integer arrays;
- :mod:`.location_codes`, :mod:`.location_ids`: locations as hash codes and small ids in a
  build's shuffles.
"""
