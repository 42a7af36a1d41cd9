-- Drives Neovim's built-in LSP client against `pipewright lsp` (crates/pipewright/tests/lsp_cli.rs).
-- Reads PIPEWRIGHT (the binary), LSP_FILE (the file to open) and LSP_OUT (where the JSON
-- results go) from the environment; always quits, with a non-zero status on any failure.
local out_path = os.getenv("LSP_OUT")
local function finish(result, status)
  local f = io.open(out_path, "w")
  f:write(vim.fn.json_encode(result))
  f:close()
  vim.cmd(status == 0 and "qa!" or "cq!")
end

local ok, err = pcall(function()
  local file = os.getenv("LSP_FILE")
  vim.cmd("edit " .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  local client = vim.lsp.start_client({
    name = "pipewright",
    cmd = { os.getenv("PIPEWRIGHT"), "lsp" },
    root_dir = vim.fn.fnamemodify(file, ":h"),
  })
  assert(client, "the language server did not start")
  vim.lsp.buf_attach_client(buf, client)
  local got = vim.wait(20000, function()
    return #vim.diagnostic.get(buf) > 0
  end, 50)
  assert(got, "no diagnostics within 20 s")
  local diags = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(diags, { lnum = d.lnum, col = d.col, code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code), severity = d.severity, message = d.message })
  end
  local uri = vim.uri_from_bufnr(buf)
  local function ask(method, line, character)
    local params = { textDocument = { uri = uri }, position = { line = line, character = character } }
    local answers = vim.lsp.buf_request_sync(buf, method, params, 20000)
    assert(answers, method .. ": no answer")
    for _, a in pairs(answers) do
      assert(not a.err, method .. ": " .. vim.inspect(a.err))
      return a.result
    end
  end
  local hover = ask("textDocument/hover", 5, 5)
  local definition = ask("textDocument/definition", 5, 25)
  -- Two edits, which Neovim sends as incremental changes: the misspelled target is fixed, and
  -- `ctx.summary.total` becomes an expression with a 2-byte and a 4-byte character (1 and 2
  -- UTF-16 units) before `ctx.late`, so a range applied in the wrong unit corrupts the text.
  vim.api.nvim_buf_set_text(buf, 6, 21, 6, 29, { "lib.summarize" })
  vim.api.nvim_buf_set_text(buf, 7, 24, 7, 41, { "count(['é𝄞'])" })
  local fixed = vim.wait(20000, function()
    local now = vim.diagnostic.get(buf)
    return #now == 1 and now[1].code == "PW0253"
  end, 50)
  local edited = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(edited, { lnum = d.lnum, col = d.col, code = d.code, message = d.message })
  end
  assert(fixed, "the edits were not checked within 20 s: " .. vim.inspect(edited))
  finish({ diagnostics = diags, hover = hover, definition = definition, edited = edited }, 0)
end)
if not ok then
  finish({ error = tostring(err) }, 1)
end
