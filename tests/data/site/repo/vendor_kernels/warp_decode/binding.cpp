// placeholder: the site tests never compile this harness
