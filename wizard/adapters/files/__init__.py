"""What is on disk: writes that never lose work (``disk``), user input read within bounds (``user_input``), the data
the wizard ships (``resources``, ``gpu_catalogue``, ``bundle``), the schema cache, the GUI's autosave, run folders,
datasets, model folders and their facts, launch scripts with the files they source, cluster launch files."""
