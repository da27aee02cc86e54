// The import form's preview: after a file or a path is chosen (or on "Preview"), the first
// bytes of the upload (never the whole file) or the path go to the preview URL, and its
// answer fills #import-preview, a live region.
(() => {
  const form = document.getElementById("import-form");
  const target = document.getElementById("import-preview");
  const button = document.getElementById("preview-button");
  if (!form || !target || !button) return;
  const limit = Number(form.dataset.previewBytes);
  let sent = 0;

  async function preview() {
    const data = new FormData();
    data.append("csrfmiddlewaretoken", form.elements.csrfmiddlewaretoken.value);
    const file = form.elements.file && form.elements.file.files[0];
    if (file) data.append("file", file.slice(0, limit + 1), file.name);
    const path = form.elements.path ? form.elements.path.value.trim() : "";
    if (path) data.append("path", path);
    if (form.elements.collection && form.elements.collection.value) data.append("collection", form.elements.collection.value);
    for (const name of COLUMNS) if (form.elements[name] && form.elements[name].value) data.append(name, form.elements[name].value);
    const mine = ++sent;
    target.setAttribute("aria-busy", "true");
    try {
      const response = await fetch(form.dataset.previewUrl, { method: "POST", body: data, credentials: "same-origin" });
      if (mine === sent) target.innerHTML = await response.text();
    } catch (error) {
      if (mine === sent) target.textContent = "The preview could not be loaded: " + error.message;
    } finally {
      if (mine === sent) target.removeAttribute("aria-busy");
    }
  }

  // A query file's columns: the preview's selects set the form's hidden fields, which the
  // import and the next preview send; a new file starts from the columns guessed again.
  const COLUMNS = ["qid_column", "query_column", "label_column"];
  function freshFile() {
    for (const name of COLUMNS) if (form.elements[name]) form.elements[name].value = "";
    preview();
  }
  target.addEventListener("change", (event) => {
    const role = event.target.dataset && event.target.dataset.columnRole;
    if (!role || !form.elements[role + "_column"]) return;
    form.elements[role + "_column"].value = event.target.value;
    preview();
  });

  button.hidden = false;
  button.addEventListener("click", preview);
  form.elements.file && form.elements.file.addEventListener("change", freshFile);
  form.elements.path && form.elements.path.addEventListener("change", freshFile);
  form.elements.collection && form.elements.collection.addEventListener("change", () => {
    if ((form.elements.file && form.elements.file.files.length) || (form.elements.path && form.elements.path.value.trim())) preview();
  });
})();
