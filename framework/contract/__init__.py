"""What a table format or index type plugin implements, and how the framework finds plugins.

- :mod:`.protocols`: the typed protocols ``TableFormat`` and ``IndexType``;
- :mod:`.hookspecs`: every hook lakesieve calls (the one hookspec module);
- :mod:`.plugin_base`: base classes plugins may build on;
- :mod:`.index_options`: typed build options of index types;
- :mod:`.format_read`: asking a format plugin's ``read`` for a few columns;
- :mod:`.registry`: the plugin manager, which loads plugins and hands out their objects.
"""
